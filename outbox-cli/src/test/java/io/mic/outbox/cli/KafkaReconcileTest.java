package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.test.OutboxTestDatabase;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.kafka.KafkaTestBroker;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code reconcile --kafka-bootstrap} on PostgreSQL and a real Kafka broker ({@link KafkaTestBroker}): a
 * topic of three partitions, events published by the real {@link KafkaPublisher}, one dispatched event never
 * published, one published event left unmarked, and a record older than the range that the timestamp seek
 * must skip.
 */
class KafkaReconcileTest {
  private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final OutboxTestDatabase postgres = OutboxTestDatabase.postgres();
  private final String table = postgres.newTable();
  private final String topic = "krc" + suffix + ".created";
  private String bootstrap;
  private Database db;

  @BeforeEach
  void connect() throws Exception {
    db = Database.connect(postgres.url(), postgres.user(), postgres.password(), table);
    db.store().createSchema();
    bootstrap = KafkaTestBroker.bootstrap();
    try (Admin admin = admin()) {
      admin.createTopics(List.of(new NewTopic(topic, 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
    }
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (bootstrap != null) {
      try (Admin admin = admin()) {
        admin.deleteTopics(Set.of(topic)).all().get(30, TimeUnit.SECONDS);
      }
    }
    if (db != null) {
      postgres.dropStore(table);
    }
  }

  @Test
  void findsWhatKafkaHoldsAndWhatItLacks() throws Exception {
    JdbcOutboxStore store = db.store();
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 1; i <= 6; i++) {
      OutboxEvent e = OutboxEvent.builder().aggregate("order", "" + i).topic(topic).payload("{}").build();
      try (java.sql.Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        store.append(c, e);
        c.commit();
      }
      events.add(store.find(e.id()).orElseThrow());
    }
    OutboxEvent lostOnBroker = events.get(2);
    OutboxEvent unmarked = events.get(4);
    // first on partition 0, a record of the lost event stamped an hour before the range (a producer's clock
    // far behind): the seek by timestamp starts after it, so it is not read
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName()))) {
      ProducerRecord<byte[], byte[]> old = new ProducerRecord<>(topic, 0,
          events.get(0).createdAt().minus(Duration.ofHours(1)).toEpochMilli(), null,
          "{}".getBytes(StandardCharsets.UTF_8));
      old.headers().add(OutboxHeaders.EVENT_ID, lostOnBroker.id().toString().getBytes(StandardCharsets.UTF_8));
      producer.send(old).get(30, TimeUnit.SECONDS);
    }
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrap).build()) {
      for (OutboxEvent e : events) {
        if (!e.id().equals(lostOnBroker.id())) {
          publisher.dispatch(e);
        }
      }
      publisher.dispatch(events.get(0)); // a duplicate delivery is one message of the event, not two
    }
    List<OutboxEvent> claimed = store.claim("krc", 10, Duration.ofMinutes(1), false);
    assertThat(claimed).hasSize(6);
    assertThat(store.markDispatched(claimed.stream().filter(e -> !e.id().equals(unmarked.id())).toList()))
        .hasSize(5);
    assertThat(store.release(claimed.stream().filter(e -> e.id().equals(unmarked.id())).toList(), Duration.ZERO))
        .containsExactly(unmarked.id()); // published, but the mark was lost

    String[] args = {"reconcile", "--topic", topic, "--from", events.get(0).createdAt().toString(),
        "--to", events.get(5).createdAt().toString(),
        "--kafka-bootstrap", bootstrap};
    Run text = Run.on(postgres, table, args);
    assertThat(text.exitCode()).as(text.stderr()).isEqualTo(1);
    assertThat(text.stdout()).isEqualTo("topic " + topic + ", created " + events.get(0).createdAt() + " .. "
        + events.get(5).createdAt() + "\n"
        + "outbox: 5 dispatched, 1 live, 0 in the DLQ\n"
        + "broker: 5 message(s) of these events\n"
        + "ok   stillLiveAfterThreshold: 0 (PENDING or PROCESSING longer than PT5M)\n"
        + "ok   deadLetters: 0 (in the DLQ)\n"
        + "DIFF dispatchedNotOnBroker: 1 (DISPATCHED in the outbox, absent from Kafka topic " + topic + ") e.g. "
        + lostOnBroker.id() + "\n"
        + "DIFF onBrokerNotMarked: 1 (on Kafka topic " + topic + " but not DISPATCHED in the outbox (a mark was"
        + " lost)) e.g. " + unmarked.id() + "\n");

    String[] json = java.util.stream.Stream.concat(java.util.Arrays.stream(args),
        java.util.stream.Stream.of("--json", "--tolerance", "1")).toArray(String[]::new);
    Run j = Run.on(postgres, table, json);
    assertThat(j.exitCode()).as(j.stderr()).isZero();
    assertThat(j.stdout()).contains("\"dispatched\":5,\"live\":1,\"deadLetters\":0,\"onBroker\":5,\"tolerance\":1")
        .contains("\"dispatchedNotOnBroker\":{\"count\":1,\"overTolerance\":false,")
        .contains("\"sample\":[\"" + lostOnBroker.id() + "\"]")
        .contains("\"onBrokerNotMarked\":{\"count\":1,\"overTolerance\":false,")
        .contains("\"sample\":[\"" + unmarked.id() + "\"]");
  }

  @Test
  void aTopicKafkaDoesNotHaveIsABadArgument() {
    Run run = Run.on(postgres, table, "reconcile", "--topic", topic, "--from", "2026-01-01T00:00:00Z",
        "--to", "2026-01-02T00:00:00Z", "--kafka-bootstrap", bootstrap, "--kafka-topic", "krc-missing-" + suffix);
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.stderr()).contains("Kafka topic krc-missing-" + suffix + " does not exist on " + bootstrap
        + ": check --kafka-topic");
  }

  @Test
  void anUnreachableBrokerIsExit1SayingWhatToCheck() { // as for mic-events-replay: retry on 1, fix on 2
    Run run = Run.on(postgres, table, "reconcile", "--topic", topic, "--from", "2026-01-01T00:00:00Z",
        "--to", "2026-01-02T00:00:00Z", "--kafka-bootstrap", "127.0.0.1:1",
        "--kafka-property", "default.api.timeout.ms=1500");
    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.stderr()).contains("mic-outbox: cannot read Kafka topic " + topic + " at 127.0.0.1:1: ")
        .endsWith("; check --kafka-bootstrap, and --kafka-property for a secured cluster\n");
  }

  @Test
  void oneBrokerPerTopic() {
    Run run = Run.on(postgres, table, "reconcile", "--topic", topic, "--from", "2026-01-01T00:00:00Z",
        "--to", "2026-01-02T00:00:00Z", "--kafka-bootstrap", bootstrap, "--rabbitmq");
    assertThat(run.exitCode()).isEqualTo(2);
    assertThat(run.stderr()).contains("--nats-url, --kafka-bootstrap and --rabbitmq exclude each other");
  }

  private Admin admin() {
    return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
  }
}
