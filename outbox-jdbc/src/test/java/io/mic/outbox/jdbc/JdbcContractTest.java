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
import org.junit.jupiter.api.TestInstance;

/** The core contract on a real database, each test with its own table. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class JdbcContractTest extends OutboxStoreContractTest {
  protected HikariDataSource dataSource;
  private final List<String> tables = new ArrayList<>();
  private JdbcOutboxStore jdbc;

  protected abstract TestDatabase database();

  /** Runs on every new connection; an odd session time zone, for example. */
  protected String connectionInitSql() {
    return null;
  }

  @BeforeAll
  void connect() {
    dataSource = database().dataSource(10, connectionInitSql());
  }

  @AfterAll
  void disconnect() {
    dataSource.close();
  }

  @AfterEach
  void dropTables() {
    tables.forEach(t -> TestDatabase.dropOutbox(dataSource, t));
    tables.clear();
  }

  @Override
  protected OutboxStore newStore() {
    String table = TestDatabase.uniqueName("outbox_ct");
    tables.add(table);
    jdbc = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    beforeCreateSchema(table);
    jdbc.createSchema();
    return jdbc;
  }

  /** Runs before createSchema() on each new table; an older schema to be upgraded, for example. */
  protected void beforeCreateSchema(String table) {}

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
    StoredTimes.shift(dataSource, jdbc, d);
  }
}
