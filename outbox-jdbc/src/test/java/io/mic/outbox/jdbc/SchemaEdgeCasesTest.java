package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Table names at the identifier limit, and a runtime role that may only read and write rows: the schema
 * must come out whole in the first case, and {@code createSchema()} must not need DDL rights in the second
 * once the schema exists. One small subclass per database.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class SchemaEdgeCasesTest {
  protected HikariDataSource admin;
  private final List<String> outboxTables = new ArrayList<>();
  private final List<String> inboxTables = new ArrayList<>();

  protected abstract TestDatabase database();

  /** SQL listing the index names of table ?1 (bound as a string) in the current schema. */
  protected abstract String indexNamesOfTable();

  /** How many secondary indexes createSchema() gives an outbox table on this database. */
  protected abstract int outboxIndexCount();

  /**
   * Statements creating login {@code role} with {@code password} and the row rights docs/jdbc.md lists:
   * SELECT, INSERT, UPDATE, DELETE on {@code outboxTables}, SELECT, INSERT, DELETE on {@code inbox},
   * SELECT, INSERT, UPDATE on {@code inboxGuard} (the ordering guard's table).
   */
  protected abstract List<String> createRuntimeRole(String role, String password, List<String> outboxTables,
      String inbox, String inboxGuard);

  /** Statements dropping {@code role} and its rights. */
  protected abstract List<String> dropRuntimeRole(String role);

  @BeforeAll
  void connect() {
    admin = database().dataSource(4, null);
  }

  @AfterAll
  void disconnect() {
    admin.close();
  }

  @AfterEach
  void dropTables() throws SQLException {
    outboxTables.forEach(t -> TestDatabase.dropOutbox(admin, t));
    for (String t : inboxTables) {
      execute(admin, List.of("DROP TABLE IF EXISTS " + quote(t), "DROP TABLE IF EXISTS "
          + quote(io.mic.outbox.jdbc.internal.TableName.parse("table", t).derivedName("sequences"))));
    }
    outboxTables.clear();
    inboxTables.clear();
  }

  /** Two names of 63 characters, equal but for the last one. */
  private static List<String> longNames(String prefix) {
    String base = TestDatabase.uniqueName(prefix);
    base = base + "_" + "x".repeat(62 - base.length() - 1);
    return List.of(base + "a", base + "b");
  }

  @Test
  void outboxTablesOf63CharactersGetEveryIndexAndTheirOwnLockTable() throws SQLException {
    List<String> names = longNames("outbox_long");
    assertThat(names).allSatisfy(n -> assertThat(n).hasSize(63));
    for (String name : names) {
      outboxTables.add(name);
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(admin).table(name).build();
      store.createSchema();
      store.createSchema();
      assertThat(indexes(name)).as("secondary indexes of " + name).hasSize(outboxIndexCount())
          .allSatisfy(i -> assertThat(i.length()).isLessThanOrEqualTo(63));
      appendClaimAndMark(store, admin);
    }
  }

  @Test
  void inboxTablesOf63CharactersGetTheirIndex() throws SQLException {
    for (String name : longNames("inbox_long")) {
      inboxTables.add(name);
      JdbcInbox inbox = JdbcInbox.builder().dataSource(admin).table(name).build();
      inbox.createSchema();
      inbox.createSchema();
      assertThat(indexes(name)).as("secondary indexes of " + name).hasSize(1);
    }
  }

  @Test
  void aRuntimeRoleWithDmlRightsOnlyRunsCreateSchemaAndDispatches() throws SQLException {
    String outbox = TestDatabase.uniqueName("outbox_rt");
    String inboxTable = TestDatabase.uniqueName("inbox_rt");
    outboxTables.add(outbox);
    inboxTables.add(inboxTable);
    JdbcOutboxStore.builder().dataSource(admin).table(outbox).build().createSchema();
    JdbcInbox.builder().dataSource(admin).table(inboxTable).build().createSchema();
    List<String> tables = new ArrayList<>(List.of(outbox, outbox + "_control")); // pauses are read by the role
    if (!(JdbcOutboxStore.builder().dataSource(admin).build().dialect() instanceof PostgresDialect)) {
      tables.add(tableBeside(outbox, "lock"));
    }
    tables.add(tableBeside(outbox, "sequences"));
    String role = "h_jdbc_rt_" + UUID.randomUUID().toString().substring(0, 8);
    String password = "pw-" + UUID.randomUUID();
    execute(admin, createRuntimeRole(role, password, tables, inboxTable, inboxTable + "_sequences"));
    try (HikariDataSource runtime = pool(role, password)) {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(runtime).table(outbox).build();
      store.createSchema();
      appendClaimAndMark(store, runtime);
      JdbcInbox inbox = JdbcInbox.builder().dataSource(runtime).table(inboxTable).build();
      inbox.createSchema();
      assertThat(inbox.runOnce("billing", "e-1", c -> { })).isTrue();
      assertThat(inbox.runOnce("billing", "e-1", c -> { })).isFalse();
      assertThat(inbox.purgeOlderThan(Duration.ofDays(1))).isZero();
      try (Connection c = runtime.getConnection()) {
        c.setAutoCommit(false);
        assertThat(inbox.checkSequence(c, "billing", "order", "1", 1)).isEqualTo(SequenceCheck.NEXT);
        assertThat(inbox.checkSequence(c, "billing", "order", "1", 1)).isEqualTo(SequenceCheck.DUPLICATE);
        c.commit();
      }
    } finally {
      execute(admin, dropRuntimeRole(role));
    }
  }

  private static void appendClaimAndMark(JdbcOutboxStore store, HikariDataSource ds) throws SQLException {
    OutboxEvent single = event("1");
    List<OutboxEvent> batch = List.of(event("1"), event("2"));
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, single);
      store.append(c, batch);
      c.commit();
    }
    List<OutboxEvent> claimed = store.claim("w", 10, Duration.ofMinutes(1), true);
    assertThat(claimed).extracting(OutboxEvent::id).containsExactly(single.id(), batch.get(1).id());
    assertThat(store.markDispatched(claimed)).hasSize(2);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 2L)
        .containsEntry(OutboxStatus.PENDING, 1L);
  }

  private static OutboxEvent event(String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.created").payload("{}").build();
  }

  private Set<String> indexes(String table) throws SQLException {
    try (Connection c = admin.getConnection(); PreparedStatement ps = c.prepareStatement(indexNamesOfTable())) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        List<String> names = new ArrayList<>();
        while (rs.next()) {
          names.add(rs.getString(1));
        }
        return names.stream().filter(n -> n.endsWith("_idx")).collect(Collectors.toSet());
      }
    }
  }

  /** The table beside {@code outbox} whose name holds {@code word}, as the store names it. */
  private String tableBeside(String outbox, String word) throws SQLException {
    try (Connection c = admin.getConnection(); PreparedStatement ps = c.prepareStatement(tablesLike())) {
      ps.setString(1, outbox.substring(0, 20) + "%" + word + "%");
      try (ResultSet rs = ps.executeQuery()) {
        List<String> names = new ArrayList<>();
        while (rs.next()) {
          names.add(rs.getString(1));
        }
        assertThat(names).as(word + " tables of " + outbox).hasSize(1);
        return names.get(0);
      }
    }
  }

  /** SQL listing the tables of the current schema whose name is LIKE ?1. */
  protected abstract String tablesLike();

  protected String quote(String name) {
    return '"' + name + '"';
  }

  private HikariDataSource pool(String user, String password) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(database().target().url());
    config.setUsername(user);
    config.setPassword(password);
    config.setMaximumPoolSize(3);
    config.setPoolName("runtime-role-" + user);
    return new HikariDataSource(config);
  }

  private static void execute(HikariDataSource ds, List<String> statements) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
  }
}
