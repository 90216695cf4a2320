package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.OutboxDoctor.Check;
import io.mic.outbox.jdbc.OutboxDoctor.Verdict;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Each check of {@link OutboxDoctor} provoked on the real servers: PostgreSQL fully, MariaDB and H2 what applies. */
class OutboxDoctorTest {
  private HikariDataSource ds;
  private String table;
  private JdbcOutboxStore store;

  private JdbcOutboxStore open(TestDatabase db) {
    ds = db.dataSource(3, null);
    table = TestDatabase.uniqueName("doctor");
    store = JdbcOutboxStore.builder().dataSource(ds).table(table).build();
    store.createSchema();
    return store;
  }

  @AfterEach
  void drop() {
    if (ds != null) {
      TestDatabase.dropOutbox(ds, table);
      ds.close();
    }
  }

  private Map<String, Check> checks(OutboxDoctor.Builder doctor) {
    Map<String, Check> byName = new java.util.LinkedHashMap<>();
    doctor.store(store).build().checks().forEach(c -> byName.put(c.name(), c));
    return byName;
  }

  private Map<String, Check> checks() {
    return checks(OutboxDoctor.builder());
  }

  @Test
  void postgresTablesAsCreatedPassWhatDependsOnThemAlone() throws SQLException {
    open(TestDatabase.POSTGRES);
    Map<String, Check> checks = checks();

    assertThat(checks.keySet()).containsExactly("schema-version", "indexes", "autovacuum", "dead-tuples",
        "oldest-transaction", "lag", "dead-letters", "held-aggregates", "pauses", "partitions");
    assertThat(checks.get("schema-version")).isEqualTo(Check.pass("schema-version", "version "
        + JdbcOutboxStore.SCHEMA_VERSION + ", as this MIC Outbox"));
    assertThat(checks.get("indexes")).isEqualTo(Check.pass("indexes", "every table and index of postgresql.sql exists"));
    assertThat(checks.get("lag")).isEqualTo(Check.pass("lag", "no live event"));
    assertThat(checks.get("dead-letters")).isEqualTo(Check.pass("dead-letters", "no dead letter"));
    assertThat(checks.get("pauses")).isEqualTo(Check.pass("pauses", "nothing paused"));
    assertThat(checks.get("held-aggregates")).isEqualTo(Check.pass("held-aggregates", "no aggregate waits behind a"
        + " dead letter"));
    assertThat(checks.get("partitions")).isEqualTo(Check.notApplicable("partitions",
        "the table is not partitioned (partitionInterval)"));
    assertThat(checks.get("dead-tuples").verdict()).isEqualTo(Verdict.PASS);
    // a new table has the server's scale factor (0.2): a warning where autovacuum runs, a failure where it is off
    Check autovacuum = checks.get("autovacuum");
    if (serverAutovacuum()) {
      assertThat(autovacuum.verdict()).isEqualTo(Verdict.WARN);
      assertThat(autovacuum.figure()).startsWith("autovacuum_vacuum_scale_factor 0.2 (server default)");
      assertThat(autovacuum.remedy()).contains("ALTER TABLE \"" + table + "\" SET (" + PostgresHealth.RECOMMENDED);
    } else {
      assertThat(autovacuum.verdict()).isEqualTo(Verdict.FAIL);
      assertThat(autovacuum.figure()).isEqualTo("autovacuum = off for the server: nothing cleans the dead rows of"
          + " the table");
      assertThat(autovacuum.remedy()).contains("VACUUM \"" + table + "\" every 30 s");
    }
  }

  @Test
  void aMissingIndexFailsWithTheStatementThatCreatesIt() throws SQLException {
    open(TestDatabase.POSTGRES);
    execute("DROP INDEX " + table + "_head_idx");

    Check indexes = checks().get("indexes");

    assertThat(indexes.verdict()).isEqualTo(Verdict.FAIL);
    assertThat(indexes.figure()).isEqualTo("missing: index " + table + "_head_idx");
    assertThat(indexes.remedy()).isEqualTo("run createSchema() once as the schema's owner, or run: CREATE INDEX IF"
        + " NOT EXISTS \"" + table + "_head_idx\" ON \"" + table + "\" (aggregate_type, aggregate_id, created_at,"
        + " id) WHERE status IN ('PENDING', 'PROCESSING')");
  }

  @Test
  void anIndexLeftInvalidByAFailedConcurrentBuildFails() throws SQLException {
    open(TestDatabase.POSTGRES);
    TestDatabase.appendOrders(ds, store, 2);
    // a unique index the rows break: the concurrent build fails and leaves the index invalid
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE UNIQUE INDEX CONCURRENTLY " + table + "_broken_idx ON " + table + " (aggregate_type)");
    } catch (SQLException expected) {
      assertThat(expected.getSQLState()).isEqualTo("23505");
    }

    Check indexes = checks().get("indexes");

    assertThat(indexes.verdict()).isEqualTo(Verdict.FAIL);
    assertThat(indexes.figure()).isEqualTo("invalid (a failed CREATE INDEX CONCURRENTLY): " + table + "_broken_idx");
  }

  @Test
  void aTransactionHeldOpenWarnsWithItsSession() throws Exception {
    open(TestDatabase.POSTGRES);
    try (Connection held = DriverManager.getConnection(TestDatabase.POSTGRES.target().url(),
        TestDatabase.POSTGRES.target().user(), TestDatabase.POSTGRES.target().password())) {
      held.setAutoCommit(false);
      store.append(held, event("order.created", "o-1"));
      OutboxDoctor.Builder doctor = OutboxDoctor.builder().maxTransactionAge(Duration.ofMillis(300));

      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        Check check = checks(doctor).get("oldest-transaction");
        assertThat(check.verdict()).isEqualTo(Verdict.WARN);
        assertThat(check.figure()).contains("holds the xmin horizon (session pid ").contains(", over 0.30s");
        assertThat(check.remedy()).startsWith("end it: SELECT pg_terminate_backend(");
      });
      held.rollback();
    }
  }

  @Test
  void deadTuplesAndTheirRatioWarn() throws SQLException {
    open(TestDatabase.POSTGRES);
    execute("ALTER TABLE " + table + " SET (autovacuum_enabled = false)");
    execute("INSERT INTO " + table + " (id, aggregate_type, aggregate_id, topic, payload) SELECT gen_random_uuid(),"
        + " 'order', 'o-' || n, 'order.created', '{}' FROM generate_series(1, 12000) AS n");
    execute("DELETE FROM " + table);

    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      Check check = checks().get("dead-tuples");
      assertThat(check.verdict()).isEqualTo(Verdict.WARN);
      assertThat(check.figure()).startsWith("12000 dead tuple(s), 100% of 12000 row versions; last vacuum never");
      assertThat(check.remedy()).startsWith("VACUUM (VERBOSE) \"" + table + "\";");
    });
    assertThat(checks().get("autovacuum").verdict()).isEqualTo(Verdict.FAIL);
  }

  @Test
  void lagDeadLettersAndPausesWarn() throws SQLException {
    open(TestDatabase.POSTGRES);
    OutboxEvent late = append(event("order.created", "o-1"));
    OutboxDoctor.Builder doctor = OutboxDoctor.builder().maxLag(Duration.ofMillis(200));
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      Check lag = checks(doctor).get("lag");
      assertThat(lag.verdict()).isEqualTo(Verdict.WARN);
      assertThat(lag.figure()).contains("(" + late.id() + ", topic order.created, PENDING, attempts 0), over 0.20s");
    });

    OutboxEvent claimed = store.claim("w", 1, Duration.ofMinutes(1), false).get(0);
    store.markDead(claimed, "broker said no");
    OutboxControl.builder().store(store).build().pause("billing.issued", "consumer v2 deploy, ask #payments");
    Map<String, Check> checks = checks();

    assertThat(checks.get("dead-letters").verdict()).isEqualTo(Verdict.WARN);
    assertThat(checks.get("dead-letters").figure()).startsWith("1 dead letter(s), the oldest created ");
    assertThat(checks.get("dead-letters").remedy()).startsWith("mic-outbox dlq list");
    assertThat(checks.get("pauses").verdict()).isEqualTo(Verdict.WARN);
    assertThat(checks.get("pauses").figure()).startsWith("topic billing.issued paused since ")
        .endsWith(": consumer v2 deploy, ask #payments");
    assertThat(checks.get("pauses").remedy()).isEqualTo("mic-outbox resume --topic billing.issued once the reason is"
        + " resolved");
    assertThat(checks.get("lag")).isEqualTo(Check.pass("lag", "no live event"));
  }

  @Test
  void anAggregateWaitingBehindADeadLetterWarns() throws SQLException {
    open(TestDatabase.POSTGRES);
    append(event("order.created", "o-1"));
    OutboxEvent claimed = store.claim("w", 1, Duration.ofMinutes(1), true).get(0);
    store.markDead(claimed, "broker said no");
    append(event("order.paid", "o-1"));
    append(event("order.shipped", "o-1"));
    append(event("order.created", "o-2")); // another aggregate, with no dead letter: not held

    Check held = checks().get("held-aggregates");

    assertThat(held).isEqualTo(Check.warn("held-aggregates", "1 aggregate(s) with live events behind a dead letter,"
        + " which dispatchers with holdAggregateOnDeadLetter(true) keep waiting; the oldest: order/o-1, 2 waiting"
        + " behind " + claimed.id(), "mic-outbox dlq held; fix the cause, then dlq redrive (the dead event goes first)"
        + " or dlq purge (the waiting ones go on)"));
  }

  @Test
  void aNewerSchemaVersionFails() throws SQLException {
    open(TestDatabase.POSTGRES);
    execute("UPDATE " + table + "_control SET tables_version = 7 WHERE topic = '#schema'");

    Check check = checks().get("schema-version");

    assertThat(check.verdict()).isEqualTo(Verdict.FAIL);
    assertThat(check.figure()).isEqualTo("version 7, newer than version " + JdbcOutboxStore.SCHEMA_VERSION
        + " of this MIC Outbox: its stores dispatch nothing from these tables");
    execute("DELETE FROM " + table + "_control");
    assertThat(checks().get("schema-version").verdict()).isEqualTo(Verdict.WARN);
  }

  @Test
  void autovacuumVerdicts() {
    Instant at = Instant.parse("2026-01-01T00:00:00Z");
    assertThat(PostgresHealth.autovacuum(new PostgresHealth.Autovacuum(true, Map.of(), 0.2, null), "t").verdict())
        .isEqualTo(Verdict.WARN);
    assertThat(PostgresHealth.autovacuum(new PostgresHealth.Autovacuum(true,
        Map.of("autovacuum_vacuum_scale_factor", "0.01"), 0.2, at), "t"))
        .isEqualTo(Check.pass("autovacuum", "autovacuum_vacuum_scale_factor 0.01 (table), last autovacuum " + at));
    assertThat(PostgresHealth.autovacuum(new PostgresHealth.Autovacuum(true, Map.of("autovacuum_enabled", "false",
        "autovacuum_vacuum_scale_factor", "0.01"), 0.2, at), "t").verdict()).isEqualTo(Verdict.FAIL);
    assertThat(PostgresHealth.autovacuum(new PostgresHealth.Autovacuum(false,
        Map.of("autovacuum_vacuum_scale_factor", "0.01"), 0.2, at), "t").verdict()).isEqualTo(Verdict.FAIL);
  }

  @Test
  void h2AnswersWhatAppliesAndSaysNotApplicableForTheRest() {
    open(TestDatabase.H2);
    Map<String, Check> checks = checks();

    assertThat(checks.get("schema-version").verdict()).isEqualTo(Verdict.PASS);
    assertThat(checks.get("indexes")).isEqualTo(Check.pass("indexes", "every table and index of h2.sql exists"));
    assertThat(checks.get("lag").verdict()).isEqualTo(Verdict.PASS);
    assertThat(checks.get("held-aggregates").verdict()).isEqualTo(Verdict.PASS);
    assertThat(List.of("autovacuum", "dead-tuples", "oldest-transaction"))
        .allSatisfy(name -> assertThat(checks.get(name).verdict()).as(name).isEqualTo(Verdict.NOT_APPLICABLE));
  }

  @Test
  void mariaDbShowsTheTransactionHeldOpen() throws Exception {
    open(TestDatabase.MARIADB);
    execute("DROP INDEX " + table + "_aggregate_idx ON " + table);
    try (Connection held = DriverManager.getConnection(TestDatabase.MARIADB.target().url(),
        TestDatabase.MARIADB.target().user(), TestDatabase.MARIADB.target().password())) {
      held.setAutoCommit(false);
      store.append(held, event("order.created", "o-1"));
      OutboxDoctor.Builder doctor = OutboxDoctor.builder().maxTransactionAge(Duration.ofMillis(300));

      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
        Check check = checks(doctor).get("oldest-transaction");
        assertThat(check.verdict()).isEqualTo(Verdict.WARN);
        assertThat(check.remedy()).startsWith("end it (KILL ");
      });
      held.rollback();
    }
    Map<String, Check> checks = checks();
    assertThat(checks.get("indexes").verdict()).isEqualTo(Verdict.FAIL);
    assertThat(checks.get("indexes").figure()).isEqualTo("missing: index " + table + "_aggregate_idx");
    assertThat(checks.get("indexes").remedy()).isEqualTo("run createSchema() once as the schema's owner, or run:"
        + " ALTER TABLE `" + table + "` ADD INDEX `" + table + "_aggregate_idx` (aggregate_type, aggregate_id,"
        + " status, created_at, id)");
    assertThat(checks.get("autovacuum").verdict()).isEqualTo(Verdict.NOT_APPLICABLE);
    assertThat(checks.get("dead-tuples").verdict()).isEqualTo(Verdict.NOT_APPLICABLE);
  }

  private static OutboxEvent event(String topic, String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload("{}").build();
  }

  private OutboxEvent append(OutboxEvent event) throws SQLException {
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, event);
      c.commit();
      c.setAutoCommit(true);
    }
    return event;
  }

  private void execute(String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private boolean serverAutovacuum() throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SHOW autovacuum")) {
      rs.next();
      return "on".equals(rs.getString(1));
    }
  }
}
