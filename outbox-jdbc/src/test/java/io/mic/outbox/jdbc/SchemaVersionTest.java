package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PauseState;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The schema version in the control table: createSchema() records it, and a store refuses to dispatch from
 * tables that record a newer one, on every database.
 */
class SchemaVersionTest {
  private HikariDataSource ds;
  private String table;
  private TestDatabase db;

  private JdbcOutboxStore open(TestDatabase db) {
    this.db = db;
    ds = db.dataSource(3, null);
    table = TestDatabase.uniqueName("schema_version");
    return JdbcOutboxStore.builder().dataSource(ds).table(table).build();
  }

  @AfterEach
  void drop() {
    if (ds != null) {
      TestDatabase.dropOutbox(ds, table);
      ds.close();
    }
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.class)
  void createSchemaRecordsTheLibrarysVersionAndTheRowIsNoPause(TestDatabase db) throws SQLException {
    JdbcOutboxStore store = open(db);
    store.createSchema();

    assertThat(recorded()).isEqualTo(JdbcOutboxStore.SCHEMA_VERSION);
    OutboxControl control = OutboxControl.builder().store(store).build();
    assertThat(control.pauses()).isEmpty();
    assertThat(control.state()).isEqualTo(PauseState.NONE);
    assertThat(store.pauseState()).isEqualTo(PauseState.NONE);
    assertThatThrownBy(() -> control.resume(SchemaVersion.ROW)).isInstanceOf(IllegalArgumentException.class)
        .hasMessage("'#schema' is the control table's row of the schema version, not a pause: it is never paused or"
            + " resumed");
    store.createSchema(); // idempotent
    assertThat(recorded()).isEqualTo(JdbcOutboxStore.SCHEMA_VERSION);
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.class)
  void aStoreRefusesToDispatchFromTablesOfANewerSchemaVersion(TestDatabase db) throws SQLException {
    JdbcOutboxStore writer = open(db);
    writer.createSchema();
    TestDatabase.appendOrders(ds, writer, 2);
    int newer = JdbcOutboxStore.SCHEMA_VERSION + 1;
    update("UPDATE " + control() + " SET tables_version = " + newer + " WHERE topic = '#schema'");

    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(table).build();
    assertThatThrownBy(() -> store.claim("w", 10, Duration.ofMinutes(1), false))
        .isInstanceOf(SchemaTooNewException.class)
        .hasMessageContaining("schema version " + newer + ", newer than version " + JdbcOutboxStore.SCHEMA_VERSION)
        .hasMessageContaining("Run the application and mic-outbox with the version that upgraded the tables");
    assertThatThrownBy(() -> store.fetchPending(10, false, Set.of())).isInstanceOf(SchemaTooNewException.class);
    assertThatThrownBy(store::createSchema).isInstanceOf(SchemaTooNewException.class);
    assertThat(store.countByStatus().get(OutboxStatus.PENDING)).isEqualTo(2);
    assertThat(recorded()).isEqualTo(newer); // createSchema() neither lowered nor rewrote it

    update("UPDATE " + control() + " SET tables_version = " + JdbcOutboxStore.SCHEMA_VERSION
        + " WHERE topic = '#schema'");
    JdbcOutboxStore again = JdbcOutboxStore.builder().dataSource(ds).table(table).build();
    assertThat(again.claim("w", 10, Duration.ofMinutes(1), false)).hasSize(2);
  }

  /**
   * A store that already dispatches reads the version again on its recheck interval (30 s in a store; 100 ms here,
   * on the class the store's claims ask) and refuses once a newer version upgraded the tables.
   */
  @org.junit.jupiter.api.Test
  void aVersionAlreadyReadIsReadAgainOnItsRecheckAndRefusesANewerOne() throws SQLException {
    JdbcOutboxStore store = open(TestDatabase.POSTGRES);
    store.createSchema();
    TestDatabase.appendOrders(ds, store, 1);
    assertThat(store.claim("w", 1, Duration.ofMinutes(1), false)).hasSize(1);
    SchemaVersion running = new SchemaVersion(store.access(), Duration.ofMillis(100));
    running.requireKnown();

    update("UPDATE " + control() + " SET tables_version = " + (JdbcOutboxStore.SCHEMA_VERSION + 1)
        + " WHERE topic = '#schema'");

    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).untilAsserted(() ->
        assertThatThrownBy(running::requireKnown).isInstanceOf(SchemaTooNewException.class)
            .hasMessageContaining("schema version " + (JdbcOutboxStore.SCHEMA_VERSION + 1)));
  }

  @ParameterizedTest
  @EnumSource(TestDatabase.class)
  void aControlTableOfAnEarlierVersionGetsTheColumnAndTheVersion(TestDatabase db) throws SQLException {
    JdbcOutboxStore store = open(db);
    store.createSchema();
    update("DROP TABLE " + control() + "");
    String timestamp = db == TestDatabase.MARIADB ? "DATETIME(6)" : "TIMESTAMP(6) WITH TIME ZONE";
    update("CREATE TABLE " + control() + " (topic VARCHAR(255) NOT NULL PRIMARY KEY, reason VARCHAR(1000)"
        + " NOT NULL, paused_at " + (db == TestDatabase.POSTGRES ? "timestamptz" : timestamp) + " NOT NULL)");
    OutboxControl.builder().store(store).build().pause("billing.issued", "consumer deploy");

    JdbcOutboxStore.builder().dataSource(ds).table(table).build().createSchema();

    assertThat(recorded()).isEqualTo(JdbcOutboxStore.SCHEMA_VERSION);
    assertThat(OutboxControl.builder().store(store).build().pauses()).extracting(OutboxControl.Pause::topic)
        .containsExactly("billing.issued");
  }

  /** The control table's name as SQL: H2 folds unquoted names to upper case, the store quotes them. */
  private String control() {
    return db == TestDatabase.H2 ? "\"" + table + "_control\"" : table + "_control";
  }

  private int recorded() throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT tables_version FROM " + control() + " WHERE topic = '#schema'")) {
      assertThat(rs.next()).as("the version row").isTrue();
      return rs.getInt(1);
    }
  }

  private void update(String sql) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }
}
