package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A read without claims leaves out the events in flight (up to two batches per worker) through a hash of their
 * ids, also in a generic plan, which PostgreSQL may keep for a statement the driver has prepared on the server
 * (pgjdbc does from its fifth execution). A {@code NOT (id = ANY(?))} filter is hashed only in a plan made for
 * the bound array; in a generic plan it compares every row the read visits with every id in flight, one after
 * the other, and the in-flight rows come first in dispatch order: a read of 500 beside 1,000 in flight makes
 * about a million comparisons. The plan is read with the statement prepared in SQL and
 * {@code plan_cache_mode = force_generic_plan}.
 */
class PostgresFetchPlanTest {
  private HikariDataSource dataSource;
  private String table;

  @BeforeEach
  void createTable() {
    dataSource = TestDatabase.POSTGRES.dataSource(1, null);
    table = TestDatabase.uniqueName("outbox_fetch_plan");
  }

  @AfterEach
  void dropTable() {
    TestDatabase.dropOutbox(dataSource, table);
    dataSource.close();
  }

  @ParameterizedTest(name = "ordered: {0}")
  @ValueSource(booleans = {false, true})
  void theGenericPlanLeavesTheEventsInFlightOutThroughAHash(boolean ordered) throws SQLException {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    TestDatabase.appendOrders(dataSource, store, 2_000);
    Set<UUID> inFlight = new LinkedHashSet<>(store.fetchPending(1_000, ordered, Set.of()).stream()
        .map(OutboxEvent::id).toList());
    Dialect dialect = Dialect.POSTGRESQL;
    DispatchSql sql = new DispatchSql(dialect, Tables.of(TableName.parse("table", table), dialect),
        Statements.Database.POSTGRESQL);
    String read = FetchStatement.statement(sql, ReadRequest.fetch(500, ordered, Set.of(), inFlight).withoutControl())
        .text();

    String plan = genericPlan(read, "'\\x" + HexFormat.of().formatHex(Ids.bytes(List.copyOf(inFlight))) + "', 500");

    assertThat(plan).as("the generic plan of %s", read).contains("hashed SubPlan")
        .doesNotContain("ALL (").doesNotContain("ANY (");
  }

  /** EXPLAIN of {@code statement} (JDBC placeholders) executed with {@code arguments}, in its generic plan. */
  private String genericPlan(String statement, String arguments) throws SQLException {
    StringBuilder numbered = new StringBuilder();
    int n = 0;
    for (char ch : statement.toCharArray()) {
      numbered.append(ch == '?' ? "$" + ++n : String.valueOf(ch));
    }
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("ANALYZE " + table);
      s.execute("SET plan_cache_mode = force_generic_plan");
      s.execute("PREPARE read_in_flight AS " + numbered);
      try (ResultSet rs = s.executeQuery("EXPLAIN EXECUTE read_in_flight(" + arguments + ")")) {
        StringBuilder plan = new StringBuilder();
        while (rs.next()) {
          plan.append(rs.getString(1)).append('\n');
        }
        return plan.toString();
      } finally {
        s.execute("DEALLOCATE read_in_flight");
        s.execute("RESET plan_cache_mode");
      }
    }
  }
}
