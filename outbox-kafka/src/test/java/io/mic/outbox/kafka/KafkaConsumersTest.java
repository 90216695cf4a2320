package io.mic.outbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.SchemaVersions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link KafkaConsumers} on a real broker. */
class KafkaConsumersTest {
  private String bootstrap;
  private String topic;

  @BeforeEach
  void createTopic() throws Exception {
    bootstrap = KafkaTestBroker.bootstrap();
    topic = KafkaTestBroker.uniqueTopic();
    KafkaTestBroker.createTopic(bootstrap, topic, 1);
  }

  @AfterEach
  void deleteTopic() throws Exception {
    KafkaTestBroker.deleteTopic(bootstrap, topic);
  }

  /**
   * A consumer that reads version 1 meets a version-2 record between two version-1 records of its partition:
   * the first is applied, the version-2 one is not and comes back at every poll, and the one behind it waits,
   * so nothing overtakes it. Once the consumer reads version 2, both are applied once and the offsets committed.
   */
  @Test
  void aRecordNewerThanTheConsumerReadsHoldsItsPartitionUntilAConsumerThatReadsItAppliesItOnce() {
    OutboxEvent first = event("1", 1);
    OutboxEvent newer = event("2", 2);
    OutboxEvent behind = event("3", 1);
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    store.append(first);
    store.append(newer);
    store.append(behind);
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrap).build()) {
      assertThat(OutboxDispatcher.builder().store(store).dispatchFn(publisher).build().dispatchOnce().dispatched())
          .isEqualTo(3);
    }
    List<String> applied = new ArrayList<>();
    List<DeliveryOutcome> outcomes = new ArrayList<>();
    SchemaVersions before = SchemaVersions.upTo(1);

    try (KafkaConsumer<byte[], byte[]> consumer = consumer()) {
      consumer.subscribe(List.of(topic));
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        outcomes.addAll(KafkaConsumers.handle(consumer, consumer.poll(Duration.ofMillis(200)), before,
            (record, eventId) -> applied.add(eventId)));
        return outcomes.stream().filter(o -> o == DeliveryOutcome.REDELIVERED).count() >= 3;
      });
      assertThat(applied).as("the record behind the refused one waits").containsExactly(first.id().toString());

      SchemaVersions upgraded = before.topic(topic, 2);
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        KafkaConsumers.handle(consumer, consumer.poll(Duration.ofMillis(200)), upgraded,
            (record, eventId) -> applied.add(eventId));
        return applied.size() == 3;
      });
      assertThat(applied).containsExactly(first.id().toString(), newer.id().toString(), behind.id().toString());
      TopicPartition partition = new TopicPartition(topic, 0);
      assertThat(consumer.committed(Set.of(partition)).get(partition).offset()).as("committed past all three")
          .isEqualTo(3);
      assertThat(consumer.poll(Duration.ofMillis(500)).isEmpty()).as("not delivered again").isTrue();
    }
  }

  private OutboxEvent event(String aggregateId, int schemaVersion) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).schemaVersion(schemaVersion)
        .payload("{}").build();
  }

  private KafkaConsumer<byte[], byte[]> consumer() {
    return new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ConsumerConfig.GROUP_ID_CONFIG, topic + "-billing",
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName()));
  }
}
