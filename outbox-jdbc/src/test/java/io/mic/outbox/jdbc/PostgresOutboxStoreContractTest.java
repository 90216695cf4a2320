package io.mic.outbox.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.testkit.OutboxStoreContractTest;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

/** The core contract, on PostgreSQL, each test with its own table. */
class PostgresOutboxStoreContractTest extends OutboxStoreContractTest {
  static HikariDataSource dataSource;
  private final List<String> tables = new ArrayList<>();
  private JdbcOutboxStore jdbc;

  @BeforeAll
  static void connect() {
    dataSource = PostgresTestDatabase.dataSource(10, null);
  }

  @AfterAll
  static void disconnect() {
    dataSource.close();
  }

  @AfterEach
  void dropTables() {
    tables.forEach(t -> PostgresTestDatabase.drop(dataSource, t));
  }

  @Override
  protected OutboxStore newStore() {
    String table = PostgresTestDatabase.uniqueTable("outbox_ct");
    tables.add(table);
    jdbc = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    jdbc.createSchema();
    return jdbc;
  }

  @Override
  protected void append(List<OutboxEvent> events) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      jdbc.append(c, events);
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  protected void elapse(Duration d) {
    jdbc.shiftTimesForTesting(d);
  }
}
