package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import io.nats.client.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The publisher's own connections: batches published at the same time go over connections of their own, each
 * opened when first needed; publications one after the other use one.
 */
class NatsConnectionsTest {
  @RegisterExtension final TestStream stream = new TestStream();
  private final ExecutorService threads = Executors.newCachedThreadPool();

  @AfterEach
  void stopThreads() {
    threads.shutdownNow();
  }

  private List<OutboxEvent> events(int count) {
    return IntStream.range(0, count).mapToObj(n -> OutboxEvent.builder().aggregate("order", "o-" + n)
        .topic(stream.name() + ".a").payload("{\"n\":" + n + "}").build()).toList();
  }

  @Test
  void publicationsOneAfterTheOtherOpenOneConnection() throws Exception {
    try (BlackholeProxy proxy = BlackholeProxy.to(NatsTestServer.url());
        NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(proxy.url()).connections(4)
            .build()) {
      for (int i = 0; i < 5; i++) {
        assertThat(publisher.dispatchBatch(events(100))).isEmpty();
      }
      publisher.dispatch(events(1).get(0));
      assertThat(proxy.acceptedConnections()).isEqualTo(1);
    }
    assertThat(stream.messages()).isEqualTo(501);
  }

  /**
   * One batch hangs on a connection that carries nothing (its PubAcks never come); a batch published meanwhile
   * opens a second connection and is acknowledged at once, without waiting for the first.
   */
  @Test
  void aBatchPublishedWhileAnotherWaitsGoesOverAConnectionOfItsOwn() throws Exception {
    Duration ackTimeout = Duration.ofSeconds(8);
    try (BlackholeProxy proxy = BlackholeProxy.to(NatsTestServer.url());
        NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(proxy.url()).connections(2)
            .ackTimeout(ackTimeout).build()) {
      assertThat(publisher.dispatchBatch(events(1))).isEmpty(); // opens the first connection
      proxy.blackholeOpenConnections();

      AtomicReference<Thread> waiting = new AtomicReference<>();
      List<OutboxEvent> stuck = events(3);
      Future<Map<UUID, Exception>> first = threads.submit(() -> {
        waiting.set(Thread.currentThread());
        return publisher.dispatchBatch(stuck);
      });
      await("the first batch waits for its PubAcks").atMost(Duration.ofSeconds(10))
          .until(() -> waiting.get() != null && waiting.get().getState() == Thread.State.TIMED_WAITING);

      long start = System.nanoTime();
      Map<UUID, Exception> second = CompletableFuture.supplyAsync(() -> {
        try {
          return publisher.dispatchBatch(events(200));
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
      }, threads).get(ackTimeout.toSeconds() / 2, TimeUnit.SECONDS);
      assertThat(second).isEmpty();
      assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(ackTimeout);
      assertThat(first).isNotDone();
      assertThat(proxy.acceptedConnections()).isEqualTo(2);
      assertThat(stream.messages()).isEqualTo(201);

      Map<UUID, Exception> timedOut = first.get(ackTimeout.toSeconds() + 15, TimeUnit.SECONDS);
      assertThat(timedOut).containsOnlyKeys(stuck.stream().map(OutboxEvent::id).toList());
      assertThat(timedOut.values()).allSatisfy(e -> assertThat(e).isInstanceOf(PublishUnavailableException.class));
    }
  }

  @Test
  void connectionsIsBetweenOneAndSixteenAndNeedsTheUrl() {
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().url(NatsTestServer.url()).connections(0).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("connections must be between 1 and 16, was 0");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().url(NatsTestServer.url()).connections(17).build())
        .hasMessage("connections must be between 1 and 16, was 17");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().connection(stream.admin()).connections(2).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("connections(2) needs url(...): a publisher on the application's connection uses that one"
            + " connection; build it with .url(\"nats://...\") to let it open several");
    NatsJetStreamPublisher.builder().connection(stream.admin()).connections(1).build().close(); // leaves admin open
    assertThat(stream.admin().getStatus()).isEqualTo(Connection.Status.CONNECTED);
  }
}
