package io.mic.outbox.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The outbox on PostgreSQL publishing to Kafka, and the inbox on the consumer side. */
class KafkaOnPostgresTest {
  private static final Pattern SEQ = Pattern.compile("\"seq\":(\\d+)");

  private String bootstrap;
  private String topic;
  private HikariDataSource ds;
  private String outboxTable;
  private String inboxTable;

  @BeforeEach
  void setUp() throws Exception {
    ds = TestPostgres.dataSource(8);
    bootstrap = KafkaTestBroker.bootstrap();
    topic = KafkaTestBroker.uniqueTopic();
    KafkaTestBroker.createTopic(bootstrap, topic, 4);
    outboxTable = TestPostgres.uniqueTable("kafka_outbox");
    inboxTable = TestPostgres.uniqueTable("kafka_inbox");
  }

  @AfterEach
  void tearDown() throws Exception {
    if (ds != null) {
      TestPostgres.drop(ds, outboxTable, inboxTable);
      ds.close();
      KafkaTestBroker.deleteTopic(bootstrap, topic);
    }
  }

  @Test
  void fourClaimingOrderedWorkersKeepEachAggregatesOrderOnItsPartition() throws Exception {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(outboxTable).build();
    store.createSchema();
    int aggregates = 16;
    int perAggregate = 25;
    List<OutboxEvent> events = new ArrayList<>();
    for (int seq = 1; seq <= perAggregate; seq++) {
      for (int a = 0; a < aggregates; a++) {
        events.add(OutboxEvent.builder().aggregate("account", "acc-" + a).topic(topic)
            .payload("{\"seq\":" + seq + "}").build());
      }
    }
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    }

    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrap)
        .property("linger.ms", "5").build();
        AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher)
            .useClaim(true).preserveAggregateOrder(true).workers(4).batchSize(8)
            .pollInterval(Duration.ofMillis(20)).build()) {
      dispatcher.start();
      await().atMost(Duration.ofSeconds(60)).until(
          () -> store.countByStatus().get(OutboxStatus.DISPATCHED) == aggregates * perAggregate);
    }
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DLQ, 0L).containsEntry(OutboxStatus.PENDING, 0L);

    List<ConsumerRecord<byte[], byte[]>> records = TopicReader.readAtLeast(bootstrap, topic, events.size());
    assertThat(records).hasSize(events.size());
    Map<String, List<Integer>> seqByAggregate = new HashMap<>();
    Map<String, Integer> partitionOf = new HashMap<>();
    for (ConsumerRecord<byte[], byte[]> r : records) { // partition, then offset order
      String aggregate = new String(r.key(), UTF_8);
      assertThat(partitionOf.computeIfAbsent(aggregate, k -> r.partition())).as(aggregate).isEqualTo(r.partition());
      Matcher m = SEQ.matcher(new String(r.value(), UTF_8));
      assertThat(m.find()).isTrue();
      seqByAggregate.computeIfAbsent(aggregate, k -> new ArrayList<>()).add(Integer.parseInt(m.group(1)));
    }
    List<Integer> expected = new ArrayList<>();
    for (int seq = 1; seq <= perAggregate; seq++) {
      expected.add(seq);
    }
    assertThat(seqByAggregate).hasSize(aggregates);
    seqByAggregate.forEach((aggregate, seqs) -> assertThat(seqs).as(aggregate).isEqualTo(expected));
    assertThat(partitionOf.values().stream().distinct().count()).isEqualTo(4);
  }

  @Test
  void theInboxAbsorbsARedeliveredRecordAndItsReplay() throws Exception {
    JdbcInbox inbox = JdbcInbox.builder().dataSource(ds).table(inboxTable).build();
    inbox.createSchema();
    OutboxEvent e = OutboxEvent.builder().aggregate("invoice", "9").topic(topic).payload("{\"amount\":12}").build();
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrap).build()) {
      publisher.dispatch(e);
      publisher.dispatch(e); // the dispatcher crashed before markDispatched: the same event again
    }
    try (KafkaProducer<byte[], byte[]> raw = new KafkaProducer<>(Map.of("bootstrap.servers", bootstrap),
        new ByteArraySerializer(), new ByteArraySerializer())) {
      RecordHeaders replay = new RecordHeaders();
      replay.add("x-replay", "true".getBytes(UTF_8));
      replay.add("x-replay-batch-id", "b-1".getBytes(UTF_8));
      replay.add("x-original-event-id", e.id().toString().getBytes(UTF_8));
      raw.send(new ProducerRecord<>(topic, null, "9".getBytes(UTF_8), "{\"amount\":12}".getBytes(UTF_8), replay))
          .get();
    }

    List<ConsumerRecord<byte[], byte[]>> records = TopicReader.readAtLeast(bootstrap, topic, 3);
    assertThat(records).hasSize(3);
    Map<String, Integer> applied = new ConcurrentHashMap<>();
    List<Boolean> firsts = new ArrayList<>();
    for (ConsumerRecord<byte[], byte[]> r : records) {
      String eventId = KafkaHeaders.idempotencyKey(r.headers());
      try (Connection c = ds.getConnection()) {
        c.setAutoCommit(false);
        boolean first = inbox.tryRecord(c, "billing", eventId);
        if (first) {
          applied.merge(eventId, 1, Integer::sum);
        }
        c.commit();
        firsts.add(first);
      }
    }
    assertThat(firsts).containsExactly(true, false, false);
    assertThat(applied).isEqualTo(Map.of(e.id().toString(), 1));
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT consumer, event_id FROM " + inboxTable)) {
      assertThat(rs.next()).isTrue();
      assertThat(rs.getString(1)).isEqualTo("billing");
      assertThat(rs.getString(2)).isEqualTo(e.id().toString());
      assertThat(rs.next()).isFalse();
    }
  }
}
