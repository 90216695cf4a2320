package io.mic.outbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcInbox;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Duplicates a Kafka consumer group really produces, on a real broker, absorbed by the inbox on a real
 * PostgreSQL: a consumer that applied records but died before committing its offsets, and a rebalance that
 * moves a partition whose records were applied but not committed. Each record's effect is applied once.
 */
class KafkaConsumerDuplicatesTest {
  private String bootstrap;
  private String topic;
  private String group;
  private HikariDataSource ds;
  private JdbcInbox inbox;
  private String inboxTable;
  private final Map<String, AtomicInteger> effects = new ConcurrentHashMap<>();

  @BeforeEach
  void setUp() throws Exception {
    ds = TestPostgres.dataSource(4);
    bootstrap = KafkaTestBroker.bootstrap();
    topic = KafkaTestBroker.uniqueTopic();
    group = topic + "-billing";
    KafkaTestBroker.createTopic(bootstrap, topic, 2);
    inboxTable = TestPostgres.uniqueTable("kafka_dup_inbox");
    inbox = JdbcInbox.builder().dataSource(ds).table(inboxTable).build();
    inbox.createSchema();
  }

  @AfterEach
  void tearDown() throws Exception {
    if (ds != null) {
      TestPostgres.drop(ds, inboxTable);
      ds.close();
      KafkaTestBroker.deleteTopic(bootstrap, topic);
    }
  }

  @Test
  void aConsumerThatDiesBeforeItsOffsetCommitHasItsRecordsDeliveredAgainAndTheInboxAbsorbsThem() throws Exception {
    Set<String> ids = publish(6);
    List<String> appliedFirst = new ArrayList<>();
    KafkaConsumer<byte[], byte[]> dying = consumer();
    dying.subscribe(List.of(topic));
    await().atMost(Duration.ofSeconds(30)).until(() -> {
      for (ConsumerRecord<byte[], byte[]> r : dying.poll(Duration.ofMillis(100))) {
        assertThat(apply(r)).isTrue();
        appliedFirst.add(KafkaHeaders.idempotencyKey(r.headers()));
      }
      return appliedFirst.size() == ids.size();
    });
    // the process dies: no offset commit, no LeaveGroup; the group notices when the session times out
    dying.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
        .withTimeout(Duration.ZERO));

    List<String> redelivered = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> next = consumer()) {
      next.subscribe(List.of(topic));
      await().atMost(Duration.ofSeconds(60)).until(() -> {
        for (ConsumerRecord<byte[], byte[]> r : next.poll(Duration.ofMillis(200))) {
          assertThat(apply(r)).as("a record applied before the crash is a duplicate").isFalse();
          redelivered.add(KafkaHeaders.idempotencyKey(r.headers()));
        }
        next.commitSync();
        return redelivered.size() == ids.size();
      });
    }
    assertThat(redelivered).containsExactlyInAnyOrderElementsOf(ids);
    assertEachAppliedOnce(ids);
  }

  @Test
  void aRebalanceThatMovesAnUncommittedPartitionDeliversItAgainAndTheInboxAbsorbsIt() throws Exception {
    Set<String> ids = publish(10);
    Map<String, Integer> deliveries = new HashMap<>();
    Set<Integer> partitions = new HashSet<>();
    List<String> toSecond = new ArrayList<>();
    try (KafkaConsumer<byte[], byte[]> first = consumer(); KafkaConsumer<byte[], byte[]> second = consumer()) {
      first.subscribe(List.of(topic));
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        for (ConsumerRecord<byte[], byte[]> r : first.poll(Duration.ofMillis(100))) {
          deliver(r, deliveries);
          partitions.add(r.partition());
        }
        return deliveries.size() == ids.size();
      });
      assertThat(partitions).containsExactlyInAnyOrder(0, 1); // both applied, nothing committed
      second.subscribe(List.of(topic)); // the group rebalances: a partition moves to the second consumer
      await().atMost(Duration.ofSeconds(60)).until(() -> {
        first.poll(Duration.ofMillis(100)).forEach(r -> deliver(r, deliveries));
        for (ConsumerRecord<byte[], byte[]> r : second.poll(Duration.ofMillis(100))) {
          deliver(r, deliveries);
          toSecond.add(KafkaHeaders.idempotencyKey(r.headers()));
        }
        return !toSecond.isEmpty();
      });
    }
    assertThat(toSecond).allSatisfy(id -> assertThat(deliveries.get(id)).as(id).isGreaterThan(1));
    assertThat(deliveries.keySet()).isEqualTo(ids);
    assertEachAppliedOnce(ids);
  }

  private void deliver(ConsumerRecord<byte[], byte[]> r, Map<String, Integer> deliveries) {
    String id = KafkaHeaders.idempotencyKey(r.headers());
    boolean applied = apply(r);
    int n = deliveries.merge(id, 1, Integer::sum);
    assertThat(applied).as("delivery %d of %s", n, id).isEqualTo(n == 1);
  }

  private boolean apply(ConsumerRecord<byte[], byte[]> r) {
    String eventId = KafkaHeaders.idempotencyKey(r.headers());
    return inbox.runOnce("billing", eventId,
        c -> effects.computeIfAbsent(eventId, k -> new AtomicInteger()).incrementAndGet());
  }

  private void assertEachAppliedOnce(Set<String> ids) {
    assertThat(effects.keySet()).isEqualTo(ids);
    effects.forEach((id, n) -> assertThat(n.get()).as(id).isEqualTo(1));
    assertThat(inbox.recordedEventIds("billing")).isEqualTo(ids);
  }

  private Set<String> publish(int count) throws Exception {
    Set<String> ids = new HashSet<>();
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrap).build()) {
      for (int i = 0; i < count; i++) {
        OutboxEvent e = OutboxEvent.builder().aggregate("order", "o-" + i).topic(topic)
            .payload("{\"n\":" + i + "}").build();
        publisher.dispatch(e);
        ids.add(e.id().toString());
      }
    }
    return ids;
  }

  private KafkaConsumer<byte[], byte[]> consumer() {
    return new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ConsumerConfig.GROUP_ID_CONFIG, group,
        ConsumerConfig.CLIENT_ID_CONFIG, group + "-" + UUID.randomUUID().toString().substring(0, 4),
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",      // offsets are committed after the effects
        ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
        ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000",       // the broker's minimum: a dead member goes soon
        ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000",
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName()));
  }
}
