package io.mic.outbox.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PublishUnavailableException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * The broker freezes (SIGSTOP) or is killed (SIGKILL) in the middle of a drain: the events wait without losing an
 * attempt, none reaches the DLQ, and every one of them is on the topic once the broker is back.
 */
class BrokerOutageTest {
  private static final int BEFORE = 40;
  private static final int DURING = 120;

  @Test
  void aFrozenBrokerDelaysTheDrainWithoutBurningAttempts() throws Exception {
    KafkaTestBroker.ChildBroker broker = KafkaTestBroker.child();
    drainThrough(broker, true);
  }

  @Test
  void aKilledBrokerDelaysTheDrainWithoutBurningAttempts() throws Exception {
    KafkaTestBroker.ChildBroker broker = KafkaTestBroker.child();
    drainThrough(broker, false);
  }

  private void drainThrough(KafkaTestBroker.ChildBroker broker, boolean freeze) throws Exception {
    String bootstrap = broker.bootstrap();
    String topic = KafkaTestBroker.uniqueTopic();
    KafkaTestBroker.createTopic(bootstrap, topic, 4);
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    AtomicInteger unavailable = new AtomicInteger();
    List<UUID> appended = new java.util.ArrayList<>();
    boolean outage = false;
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrap)
        .deliveryTimeout(Duration.ofMillis(2_500)).requestTimeout(Duration.ofMillis(1_000))
        .maxBlock(Duration.ofMillis(1_000)).build();
        AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store)
            .dispatchFn(counting(publisher, unavailable))
            .maxAttempts(1) // a single counted attempt would move the event to the DLQ at once
            .retryBackoff(Duration.ofMillis(100), Duration.ofMillis(400))
            .batchSize(20).pollInterval(Duration.ofMillis(20)).build()) {
      for (int i = 0; i < BEFORE; i++) {
        store.append(event(topic, i, appended));
      }
      dispatcher.start();
      await().atMost(Duration.ofSeconds(20))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == BEFORE);

      if (freeze) {
        broker.freeze();
      } else {
        broker.kill();
      }
      outage = true;
      for (int i = BEFORE; i < BEFORE + DURING; i++) {
        store.append(event(topic, i, appended));
      }
      dispatcher.wakeUp();
      await("the publisher to report Kafka unavailable (or an event to reach the DLQ)").atMost(Duration.ofSeconds(30))
          .until(() -> unavailable.get() > 0 || store.countByStatus().get(OutboxStatus.DLQ) > 0);
      assertThat(store.countByStatus()).containsEntry(OutboxStatus.DLQ, 0L)
          .containsEntry(OutboxStatus.DISPATCHED, (long) BEFORE);

      if (freeze) {
        broker.thaw();
      } else {
        broker.restart();
      }
      outage = false;
      await().atMost(Duration.ofSeconds(60))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == BEFORE + DURING);
    } finally {
      if (outage) { // bring the broker back for the other tests, whatever failed
        if (freeze) {
          broker.thaw();
        } else {
          broker.restart();
        }
      }
    }
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DLQ, 0L).containsEntry(OutboxStatus.PENDING, 0L)
        .containsEntry(OutboxStatus.DISPATCHED, (long) BEFORE + DURING);

    // the successful publication is the one attempt counted: the outage burned none
    assertThat(appended).allSatisfy(id -> assertThat(store.find(id).orElseThrow().attempts()).as("attempts of %s", id)
        .isEqualTo(1));

    List<ConsumerRecord<byte[], byte[]>> records = TopicReader.readAtLeast(bootstrap, topic, BEFORE + DURING);
    Set<String> ids = records.stream()
        .map(r -> new String(r.headers().lastHeader(io.mic.outbox.OutboxHeaders.EVENT_ID).value(), UTF_8))
        .collect(Collectors.toSet());
    assertThat(ids).containsExactlyInAnyOrderElementsOf( // nothing lost; a timed-out send may have landed twice
        appended.stream().map(UUID::toString).collect(Collectors.toList()));
    KafkaTestBroker.deleteTopic(bootstrap, topic);
  }

  private static OutboxEvent event(String topic, int i, List<UUID> appended) {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "o-" + (i % 10)).topic(topic)
        .payload("{\"i\":" + i + "}").build();
    appended.add(e.id());
    return e;
  }

  /** The publisher, counting the events it reported unavailable. */
  private static BatchDispatchFn counting(KafkaPublisher publisher, AtomicInteger unavailable) {
    return new BatchDispatchFn() {
      @Override
      public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws Exception {
        Map<UUID, Exception> failures = publisher.dispatchBatch(events);
        unavailable.addAndGet((int) failures.values().stream()
            .filter(f -> f instanceof PublishUnavailableException).count());
        return failures;
      }

      @Override
      public void dispatch(OutboxEvent event) throws Exception {
        publisher.dispatch(event);
      }
    };
  }
}
