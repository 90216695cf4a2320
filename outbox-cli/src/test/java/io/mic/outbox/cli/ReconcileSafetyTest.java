package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.test.OutboxTestDatabase;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * What {@code reconcile} must not do on PostgreSQL and the shared NATS server: let its domain query write, say
 * "ok" where it compared nothing, or hide which stream it could not find.
 */
class ReconcileSafetyTest {
  private static final String NATS = System.getenv().getOrDefault("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");
  private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final OutboxTestDatabase postgres = OutboxTestDatabase.postgres();
  private final String table = postgres.newTable();
  private final String victim = "victim_rc_" + suffix;
  private final String stream = "RCS_" + suffix;
  private final String inboxTable = "inbox_rcs_" + suffix;
  private final String topic = "rcs" + suffix + ".created";
  private Database db;
  private Connection nats;

  @BeforeEach
  void connect() throws Exception {
    db = Database.connect(postgres.url(), postgres.user(), postgres.password(), table);
    db.store().createSchema();
    postgres.execute("CREATE TABLE " + victim + " (id varchar(20) PRIMARY KEY)");
    postgres.execute("INSERT INTO " + victim + " VALUES ('1'), ('2')");
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
      postgres.execute("DROP TABLE IF EXISTS " + victim);
      postgres.execute("DROP TABLE IF EXISTS " + inboxTable);
      postgres.execute("DROP TABLE IF EXISTS " + inboxTable + "_sequences");
    }
  }

  private Run reconcile(String... more) {
    List<String> args = new ArrayList<>(List.of("reconcile", "--topic", topic, "--from", "2026-01-01T00:00:00Z",
        "--to", "2099-01-01T00:00:00Z"));
    args.addAll(List.of(more));
    return Run.on(postgres, table, args.toArray(String[]::new));
  }

  private long victimRows() throws Exception {
    try (java.sql.Connection c = db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + victim)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  @Test
  void theDomainQueryRunsReadOnlyAndIsRolledBack() throws Exception {
    Run writes = reconcile("--domain-sql", "WITH d AS (DELETE FROM " + victim + " RETURNING id) SELECT id FROM d");
    assertThat(writes.exitCode()).as(writes.stderr()).isEqualTo(2);
    assertThat(writes.stderr()).contains("mic-outbox: --domain-sql failed: ").contains("read-only transaction");
    assertThat(victimRows()).isEqualTo(2);

    Run reads = reconcile("--domain-sql", "SELECT id FROM " + victim + ";");
    assertThat(reads.exitCode()).as(reads.stderr()).isEqualTo(1);
    assertThat(reads.stdout()).contains("DIFF domainRowsWithoutEvent: 2 ");
  }

  @Test
  void aDomainQueryOfSeveralStatementsOrNotAQueryIsRefused() throws Exception {
    Run two = reconcile("--domain-sql", "SELECT 'a;b'; DROP TABLE " + victim);
    assertThat(two.exitCode()).isEqualTo(2);
    assertThat(two.stderr()).isEqualTo("mic-outbox: --domain-sql must be one query: it holds more after the ';'"
        + " at character 13; remove it\n");
    assertThat(victimRows()).isEqualTo(2);

    Run delete = reconcile("--domain-sql", "/* ids */ DELETE FROM " + victim + " RETURNING id");
    assertThat(delete.exitCode()).isEqualTo(2);
    assertThat(delete.stderr()).isEqualTo("mic-outbox: --domain-sql must be a query starting with SELECT or"
        + " WITH, not DELETE\n");
    assertThat(victimRows()).isEqualTo(2);
  }

  @Test
  void aTableThatDeletesDispatchedRowsCannotBeComparedWithTheBroker() throws Exception {
    JdbcOutboxStore deleting = JdbcOutboxStore.builder().dataSource(db.dataSource()).table(table)
        .deleteOnDispatch(true).build();
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 1; i <= 3; i++) {
      OutboxEvent e = OutboxEvent.builder().aggregate("order", "" + i).topic(topic).payload("{}").build();
      try (java.sql.Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        deleting.append(c, e);
        c.commit();
      }
      events.add(e);
      nats.jetStream().publish(topic, new Headers().add(OutboxHeaders.EVENT_ID, e.id().toString()),
          "{}".getBytes(StandardCharsets.UTF_8));
    }
    assertThat(deleting.markDispatched(deleting.claim("rc", 10, Duration.ofMinutes(1), false))).hasSize(3);

    Run r = reconcile("--nats-url", NATS, "--nats-stream", stream);
    assertThat(r.exitCode()).as(r.stdout()).isEqualTo(1);
    assertThat(r.stdout()).doesNotContain("dispatchedNotOnBroker").doesNotContain("onBrokerNotMarked")
        .contains("cannot compare: 3 message(s) on JetStream stream " + stream + " are of events created in the"
            + " range that the outbox table no longer holds");
    // without a broker, the consumer's inbox tells the same
    JdbcInbox inbox = JdbcInbox.builder().dataSource(db.dataSource()).table(inboxTable).build();
    inbox.createSchema();
    try (java.sql.Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      for (OutboxEvent e : events) {
        inbox.tryRecord(c, "billing", e.id().toString());
      }
      c.commit();
    }
    Run byInbox = reconcile("--consumer", "billing", "--inbox-table", inboxTable);
    assertThat(byInbox.exitCode()).as(byInbox.stdout()).isEqualTo(1);
    assertThat(byInbox.stdout()).doesNotContain("notProcessedByConsumer")
        .contains("cannot compare: 3 event(s) in the inbox of consumer billing were created in the range but the"
            + " outbox table no longer holds them");
  }

  @Test
  void aStreamThatDoesNotExistIsNamedWithTheOptionToFix() {
    Run r = reconcile("--nats-url", NATS, "--nats-stream", "NOPE_" + suffix);
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.stderr()).contains("\nmic-outbox: JetStream stream 'NOPE_" + suffix + "' does not exist at nats://")
        .endsWith(": name the stream that captures subject '" + topic + "'; check --nats-stream and"
            + " --nats-subject-prefix (nats stream ls lists the streams and their subjects)\n");
  }
}
