package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.DispatchDecorator;
import io.nats.client.Connection;
import io.nats.client.JetStreamOptions;
import io.nats.client.Nats;
import io.nats.client.PublishOptions;
import io.nats.client.api.StreamConfiguration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * A three-node JetStream cluster loses the quorum of an R3 stream for 10 s while a backlog drains over a connection
 * that stays up: once the stream takes a message again (an independent client publishes every 50 ms), the
 * dispatcher must publish within 2 s, not at the end of a backoff grown to 30 s.
 */
class NatsQuorumReturnTest {
  private static final int EVENTS = 20_000;
  private static final Duration OUTAGE = Duration.ofSeconds(10);
  private static final Duration BOUND = Duration.ofSeconds(2);

  @Test
  void theDispatcherPublishesWithinTwoSecondsOfTheStreamsQuorumComingBack() throws Exception {
    try (PrivateNatsCluster cluster = PrivateNatsCluster.start();
        Connection admin = Nats.connect(cluster.url(0))) {
      await("a JetStream meta leader").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500))
          .ignoreExceptions().until(() -> admin.jetStreamManagement().addStream(StreamConfiguration.builder()
              .name("QUORUM").subjects("quorum.>").replicas(3).build()) != null);
      InMemoryOutboxStore store = new InMemoryOutboxStore();
      List<OutboxEvent> backlog = new ArrayList<>();
      for (int i = 0; i < EVENTS; i++) {
        backlog.add(OutboxEvent.builder().aggregate("order", "o-" + (i % 200)).topic("quorum.changed")
            .payload("{\"n\":" + i + "}").build());
      }
      store.append(backlog);
      AtomicLong restartedAt = new AtomicLong();
      AtomicLong firstAcknowledged = new AtomicLong();
      DispatchDecorator recording = (events, next) -> {
        BatchChannel.Sent sent = next.send(events);
        return () -> {
          Map<UUID, Exception> failures = sent.outcomes();
          if (failures.size() < events.size() && restartedAt.get() != 0) {
            firstAcknowledged.compareAndSet(0, System.nanoTime());
          }
          return failures;
        };
      };
      try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(cluster.url(0))
          .ackTimeout(Duration.ofSeconds(2)).build();
          AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store)
              .dispatchFn(recording.wrap(publisher)).useClaim(true).preserveAggregateOrder(true).workers(2).build()) {
        dispatcher.start();
        await("a tenth published").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(5))
            .until(() -> dispatched(store) >= EVENTS / 10);
        cluster.kill(1);
        cluster.kill(2);
        long killedAt = System.nanoTime();
        assertThat(EVENTS - dispatched(store)).as("events pending when the quorum was lost").isPositive();
        await("the outage").atMost(OUTAGE.plusSeconds(30))
            .until(() -> System.nanoTime() - killedAt > OUTAGE.toNanos()); // the fault itself: its length
        restartedAt.set(System.nanoTime());
        cluster.restart(1);
        cluster.restart(2);
        long acceptedAt = firstIndependentPublication(admin);
        await("a publication by the dispatcher").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(10))
            .until(() -> firstAcknowledged.get() != 0);
        Duration back = Duration.ofNanos(firstAcknowledged.get() - acceptedAt);
        System.out.printf("quorum back: the stream took a message %d ms after the restarts began; the dispatcher"
            + " published %d ms after that%n", (acceptedAt - restartedAt.get()) / 1_000_000, back.toMillis());
        assertThat(back).as("first publication after the stream takes messages again").isLessThanOrEqualTo(BOUND);
        await("the backlog drained").atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100))
            .until(() -> dispatched(store) == EVENTS);
      }
      assertThat(store.countByStatus()).containsEntry(OutboxStatus.DLQ, 0L);
      assertThat(admin.jetStreamManagement().getStreamInfo("QUORUM").getStreamState().getMsgCount())
          .as("the backlog and the one independent message, each once").isEqualTo(EVENTS + 1);
    }
  }

  /** When an independent client's publication to the stream is first acknowledged ({@link System#nanoTime()}). */
  private static long firstIndependentPublication(Connection admin) {
    var js = await("the stream takes a message again").atMost(Duration.ofSeconds(60));
    AtomicLong at = new AtomicLong();
    js.pollInterval(Duration.ofMillis(50)).ignoreExceptions().until(() -> {
      // one message id for every try: a try that timed out here but was stored is not stored twice
      admin.jetStream(JetStreamOptions.builder().requestTimeout(Duration.ofMillis(500)).build())
          .publish("quorum.probe", new byte[0], PublishOptions.builder().messageId("quorum-probe").build());
      at.set(System.nanoTime());
      return true;
    });
    return at.get();
  }

  private static long dispatched(InMemoryOutboxStore store) {
    return store.countByStatus().get(OutboxStatus.DISPATCHED);
  }
}
