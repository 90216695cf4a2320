package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.test.OutboxTestDatabase;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code reconcile} on PostgreSQL and the shared NATS server, each difference provoked for real: a stream
 * message deleted, a mark skipped, an inbox row missing, a domain row without event.
 */
class ReconcileTest {
  private static final String NATS = System.getenv().getOrDefault("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");
  private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final OutboxTestDatabase postgres = OutboxTestDatabase.postgres();
  private final String table = postgres.newTable();
  private final String inbox = "inbox_rc_" + suffix;
  private final String orders = "orders_rc_" + suffix;
  private final String stream = "RC_" + suffix;
  private final String topic = "rc" + suffix + ".created";
  private Database db;
  private Connection nats;

  @BeforeEach
  void connect() throws Exception {
    db = Database.connect(postgres.url(), postgres.user(), postgres.password(), table);
    db.store().createSchema();
    nats = Nats.connect(NATS);
    nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(topic)
        .storageType(StorageType.Memory).build());
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (nats != null) {
      nats.jetStreamManagement().deleteStream(stream);
      nats.close();
    }
    if (db != null) {
      postgres.dropStore(table);
      postgres.execute("DROP TABLE IF EXISTS " + inbox);
      postgres.execute("DROP TABLE IF EXISTS " + inbox + "_sequences");
      postgres.execute("DROP TABLE IF EXISTS " + orders);
    }
  }

  @Test
  void everyDifferenceIsCountedWithItsIds() throws Exception {
    JdbcOutboxStore store = db.store();
    JdbcInbox consumerInbox = JdbcInbox.builder().dataSource(db.dataSource()).table(inbox).build();
    consumerInbox.createSchema();
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
    Map<UUID, Long> sequences = new HashMap<>();
    for (OutboxEvent e : events) { // published, as the NATS publisher does
      Headers h = new Headers().add(OutboxHeaders.EVENT_ID, e.id().toString());
      PublishAck ack = nats.jetStream().publish(topic, h, "{}".getBytes(StandardCharsets.UTF_8));
      sequences.put(e.id(), ack.getSeqno());
    }
    OutboxEvent lostOnBroker = events.get(3);
    OutboxEvent unmarked = events.get(4);
    OutboxEvent unprocessed = events.get(5);
    List<OutboxEvent> claimed = store.claim("rc", 10, Duration.ofMinutes(1), false);
    assertThat(claimed).hasSize(6);
    assertThat(store.markDispatched(claimed.stream().filter(e -> !e.id().equals(unmarked.id())).toList())).hasSize(5);
    assertThat(store.release(claimed.stream().filter(e -> e.id().equals(unmarked.id())).toList(), Duration.ZERO))
        .containsExactly(unmarked.id()); // the mark that was lost
    JetStreamManagement jsm = nats.jetStreamManagement();
    assertThat(jsm.deleteMessage(stream, sequences.get(lostOnBroker.id()))).isTrue();
    try (java.sql.Connection c = db.dataSource().getConnection(); Statement s = c.createStatement()) {
      c.setAutoCommit(false);
      for (OutboxEvent e : events) {
        if (!e.id().equals(unprocessed.id())) {
          assertThat(consumerInbox.tryRecord(c, "billing", e.id().toString())).isTrue();
        }
      }
      s.execute("CREATE TABLE " + orders + " (id varchar(20) PRIMARY KEY)");
      s.execute("INSERT INTO " + orders + " VALUES ('1'), ('2'), ('3'), ('4'), ('5'), ('6'), ('7')");
      c.commit();
    }

    String[] args = {"reconcile", "--topic", topic, "--from", events.get(0).createdAt().toString(),
        "--to", events.get(5).createdAt().toString(),
        "--nats-url", NATS, "--nats-stream", stream, "--consumer", "billing", "--inbox-table", inbox,
        "--domain-sql", "SELECT id FROM " + orders};
    Run text = Run.on(postgres, table, args);
    assertThat(text.exitCode()).as(text.stderr()).isEqualTo(1);
    assertThat(text.stdout()).isEqualTo("topic " + topic + ", created " + events.get(0).createdAt() + " .. "
        + events.get(5).createdAt() + "\n"
        + "outbox: 5 dispatched, 1 live, 0 in the DLQ\n"
        + "broker: 5 message(s) of these events\n"
        + "ok   stillLiveAfterThreshold: 0 (PENDING or PROCESSING longer than PT5M)\n"
        + "ok   deadLetters: 0 (in the DLQ)\n"
        + "DIFF dispatchedNotOnBroker: 1 (DISPATCHED in the outbox, absent from JetStream stream " + stream + ") e.g. "
        + lostOnBroker.id() + "\n"
        + "DIFF onBrokerNotMarked: 1 (on JetStream stream " + stream + " but not DISPATCHED in the outbox (a mark was"
        + " lost)) e.g. " + unmarked.id() + "\n"
        + "DIFF notProcessedByConsumer: 1 (on the broker but not in the inbox of consumer billing) e.g. "
        + unprocessed.id() + "\n"
        + "DIFF domainRowsWithoutEvent: 1 (returned by the domain query, without an event of the topic in the range)"
        + " e.g. 7\n");

    String[] tolerant = java.util.stream.Stream.concat(java.util.Arrays.stream(args),
        java.util.stream.Stream.of("--tolerance", "1", "--json")).toArray(String[]::new);
    Run json = Run.on(postgres, table, tolerant);
    assertThat(json.exitCode()).as(json.stderr()).isZero();
    assertThat(json.stdout()).contains("\"dispatched\":5,\"live\":1,\"deadLetters\":0,\"onBroker\":5,\"tolerance\":1")
        .contains("\"dispatchedNotOnBroker\":{\"count\":1,\"overTolerance\":false,")
        .contains("\"sample\":[\"" + unmarked.id() + "\"]");

    // the range is inclusive at both ends: without the first event, its message is left out of every count
    String[] later = args.clone();
    later[4] = events.get(1).createdAt().toString();
    Run narrow = Run.on(postgres, table, later);
    assertThat(narrow.stdout().lines().skip(1).limit(2).collect(Collectors.joining("\n")))
        .isEqualTo("outbox: 4 dispatched, 1 live, 0 in the DLQ\nbroker: 4 message(s) of these events");
  }

  @Test
  void withRabbitMqTheBrokerIsNotComparedAndLiveAndDeadEventsAreCounted() throws Exception {
    JdbcOutboxStore store = db.store();
    JdbcInbox consumerInbox = JdbcInbox.builder().dataSource(db.dataSource()).table(inbox).build();
    consumerInbox.createSchema();
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 1; i <= 4; i++) {
      OutboxEvent e = OutboxEvent.builder().aggregate("order", "" + i).topic(topic).payload("{}").build();
      try (java.sql.Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        store.append(c, e);
        c.commit();
      }
      events.add(store.find(e.id()).orElseThrow());
    }
    OutboxEvent processed = events.get(0);
    OutboxEvent unprocessed = events.get(1);
    OutboxEvent live = events.get(2);
    OutboxEvent dead = events.get(3);
    List<OutboxEvent> claimed = store.claim("rc", 10, Duration.ofMinutes(1), false);
    assertThat(claimed).hasSize(4);
    assertThat(store.markDispatched(claimed.subList(0, 2))).hasSize(2);
    assertThat(store.release(List.of(claimed.get(2)), Duration.ZERO)).containsExactly(live.id());
    assertThat(store.markDead(claimed.get(3), "refused")).isTrue();
    try (java.sql.Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      assertThat(consumerInbox.tryRecord(c, "billing", processed.id().toString())).isTrue();
      c.commit();
    }

    Run run = Run.on(postgres, table, "reconcile", "--topic", topic, "--from", events.get(0).createdAt().toString(),
        "--to", events.get(3).createdAt().toString(), "--live-threshold", "0s", "--rabbitmq",
        "--consumer", "billing", "--inbox-table", inbox);
    assertThat(run.exitCode()).as(run.stderr()).isEqualTo(1);
    assertThat(run.stdout()).isEqualTo("topic " + topic + ", created " + events.get(0).createdAt() + " .. "
        + events.get(3).createdAt() + "\n"
        + "outbox: 2 dispatched, 1 live, 1 in the DLQ\n"
        + "DIFF stillLiveAfterThreshold: 1 (PENDING or PROCESSING longer than PT0S) e.g. " + live.id() + "\n"
        + "DIFF deadLetters: 1 (in the DLQ) e.g. " + dead.id() + "\n"
        + "DIFF notProcessedByConsumer: 1 (DISPATCHED but not in the inbox of consumer billing) e.g. "
        + unprocessed.id() + "\n"
        + "note: RabbitMQ keeps no log of published messages, so the broker was not compared: check the"
        + " consumer's inbox (--consumer) instead\n");
  }

  @Test
  void anUnreachableNatsServerIsExit1WithoutItsPassword() { // as for mic-events-replay: retry on 1, fix on 2
    Run run = Run.on(postgres, table, "reconcile", "--topic", topic, "--from", "2026-01-01T00:00:00Z",
        "--to", "2026-01-02T00:00:00Z", "--nats-url", "nats://ops:s3cret@127.0.0.1:1", "--nats-stream", stream);
    assertThat(run.exitCode()).isEqualTo(1);
    assertThat(run.stderr()).contains("mic-outbox: cannot connect to NATS at nats://***@127.0.0.1:1: ")
        .endsWith("; check --nats-url\n").doesNotContain("s3cret");
  }
}
