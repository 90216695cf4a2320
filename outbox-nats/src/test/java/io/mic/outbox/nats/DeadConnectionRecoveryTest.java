package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.DispatchResult;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A connection the client still reports as CONNECTED but that carries nothing (here: a proxy that drops
 * every byte; after a server restart: a client whose writer stays on its reconnect queue) must not stop
 * dispatch for good: the publisher probes it and replaces it.
 */
class DeadConnectionRecoveryTest {
  @RegisterExtension final TestStream stream = new TestStream();
  private final InMemoryOutboxStore store = new InMemoryOutboxStore();

  private OutboxEvent event(int n) {
    return OutboxEvent.builder().aggregate("order", "o-" + n).topic(stream.name() + ".a").payload("{\"n\":" + n + "}")
        .build();
  }

  /**
   * The publisher's own connection is replaced. With an ackTimeout above the NATS client's own 5 s for a
   * reply, the client stops waiting for the PubAck first: a missing PubAck all the same.
   */
  @ParameterizedTest(name = "ackTimeout {0} ms")
  @ValueSource(longs = {500, 12_000})
  void theOwnConnectionIsReplacedWhenItLooksConnectedButAnswersNothing(long ackTimeoutMillis) throws Exception {
    try (BlackholeProxy proxy = BlackholeProxy.to(NatsTestServer.url());
        NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(proxy.url())
            .ackTimeout(Duration.ofMillis(ackTimeoutMillis)).build()) {
      OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher).build();
      store.append(event(1));
      assertThat(dispatcher.dispatchOnce().dispatched()).isEqualTo(1);

      proxy.blackholeOpenConnections();
      OutboxEvent second = event(2);
      store.append(second);
      DispatchResult stalled = dispatcher.dispatchOnce();
      assertThat(stalled.released()).isEqualTo(1);

      await("dispatch over a new connection").atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(100))
          .until(() -> dispatcher.dispatchOnce().dispatched() == 1);
      OutboxEvent stored = store.find(second.id()).orElseThrow();
      assertThat(stored.status()).isEqualTo(OutboxStatus.DISPATCHED);
      assertThat(stored.attempts()).isEqualTo(1); // the successful one: the timed-out try cost none
      assertThat(proxy.acceptedConnections()).isEqualTo(2);
    }
    assertThat(stream.messages()).isEqualTo(2);
  }

  @Test
  void theApplicationsConnectionIsToldToReconnect() throws Exception {
    try (BlackholeProxy proxy = BlackholeProxy.to(NatsTestServer.url())) {
      Connection given = Nats.connect(Options.builder().server(proxy.url()).maxReconnects(-1)
          .reconnectWait(Duration.ofMillis(100)).build());
      try {
        NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(given)
            .ackTimeout(Duration.ofMillis(500)).build();
        OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher).build();
        proxy.blackholeOpenConnections();
        OutboxEvent event = event(1);
        store.append(event);

        await("dispatch after the reconnection").atMost(Duration.ofSeconds(10))
            .pollInterval(Duration.ofMillis(100))
            .until(() -> dispatcher.dispatchOnce().dispatched() == 1);
        assertThat(store.find(event.id()).orElseThrow().attempts()).isEqualTo(1);
        assertThat(proxy.acceptedConnections()).isGreaterThanOrEqualTo(2);
      } finally {
        given.close();
      }
    }
  }
}
