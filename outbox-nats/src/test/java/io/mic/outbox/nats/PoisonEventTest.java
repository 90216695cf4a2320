package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PublishRejectedException;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StreamConfiguration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** An event the server can never take costs its own attempts and ends in the DLQ; it never stalls the others. */
class PoisonEventTest {
  private static final int MAX_PAYLOAD = 8192;

  @Test
  void aMessageOverTheServersMaxPayloadWithItsHeadersIsRejectedAndTheOtherAggregatesAreDispatched()
      throws Exception {
    try (PrivateNatsServer server = PrivateNatsServer.start("max_payload: " + MAX_PAYLOAD);
        Connection admin = Nats.connect(server.url())) {
      admin.jetStreamManagement().addStream(StreamConfiguration.builder().name("POISON").subjects("poison.>")
          .build());
      InMemoryOutboxStore store = new InMemoryOutboxStore();
      // the payload alone fits max_payload; with the publisher's headers the message does not
      String payload = "\"" + "x".repeat(MAX_PAYLOAD - 10) + "\"";
      OutboxEvent poison = OutboxEvent.builder().aggregate("order", "poison").topic("poison.created")
          .payload(payload).build();
      List<OutboxEvent> events = new ArrayList<>();
      events.add(poison);
      for (int i = 0; i < 20; i++) {
        events.add(OutboxEvent.builder().aggregate("order", "o-" + i).topic("poison.created")
            .payload("{\"n\":" + i + "}").build());
      }
      store.append(events);

      try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(server.url())
          .ackTimeout(Duration.ofSeconds(2)).build()) {
        OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher)
            .useClaim(true).preserveAggregateOrder(true).maxAttempts(3)
            .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(20)).build();
        await("every event settled").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50))
            .until(() -> {
              dispatcher.dispatchOnce();
              return store.countByStatus().get(OutboxStatus.PENDING) == 0;
            });
      }

      assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 20L)
          .containsEntry(OutboxStatus.DLQ, 1L).containsEntry(OutboxStatus.PROCESSING, 0L);
      OutboxEvent dead = store.find(poison.id()).orElseThrow();
      assertThat(dead.status()).isEqualTo(OutboxStatus.DLQ);
      assertThat(dead.attempts()).isEqualTo(3);
      assertThat(dead.lastError()).contains(PublishRejectedException.class.getName())
          .contains("the server's max_payload is 8192 bytes").doesNotContain("xxxx");
      assertThat(admin.jetStreamManagement().getStreamInfo("POISON").getStreamState().getMsgCount()).isEqualTo(20);
    }
  }
}
