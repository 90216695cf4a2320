package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import java.io.IOException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The plain-JDBC transaction helper on PostgreSQL, with a pool of one connection to see it come back. */
class PostgresJdbcTransactionsTest {
  private HikariDataSource dataSource;
  private String table;
  private JdbcOutboxStore store;

  @BeforeEach
  void setUp() {
    dataSource = TestDatabase.POSTGRES.dataSource(1, null);
    table = TestDatabase.uniqueName("outbox_tx");
    store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
  }

  @AfterEach
  void tearDown() {
    if (dataSource != null) {
      TestDatabase.dropOutbox(dataSource, table);
      dataSource.close();
    }
  }

  @Test
  void aCallbackThatReturnsCommitsTheEvent() throws SQLException {
    OutboxEvent event = event();
    String result = JdbcTransactions.inTransaction(dataSource, connection -> {
      store.append(connection, event);
      return "placed";
    });
    assertThat(result).isEqualTo("placed");
    assertThat(store.find(event.id())).isPresent();
    assertAutoCommitRestored();
  }

  @Test
  void aRuntimeExceptionRollsBackAndIsRethrownAsIs() throws SQLException {
    OutboxEvent event = event();
    IllegalStateException failure = new IllegalStateException("payment refused");
    assertThatThrownBy(() -> JdbcTransactions.useTransaction(dataSource, connection -> {
      store.append(connection, event);
      throw failure;
    })).isSameAs(failure);
    assertThat(store.find(event.id())).isEmpty();
    assertAutoCommitRestored();
  }

  @Test
  void aCheckedExceptionRollsBackAndIsWrapped() throws SQLException {
    OutboxEvent event = event();
    IOException failure = new IOException("disk full");
    assertThatThrownBy(() -> JdbcTransactions.useTransaction(dataSource, connection -> {
      store.append(connection, event);
      throw failure;
    })).isInstanceOf(OutboxException.class).hasCause(failure)
        .hasMessage("the transaction's work failed and was rolled back: java.io.IOException");
    assertThat(store.find(event.id())).isEmpty();
    assertAutoCommitRestored();
  }

  /**
   * The database ends the session while the work runs (a failover, an administrator): the caller gets the
   * work's own exception, as documented, not the failure to reset the dead connection afterwards.
   */
  @Test
  void aSessionEndedDuringTheWorkStillRethrowsTheWorksException() throws SQLException {
    OutboxEvent event = event();
    IllegalStateException failure = new IllegalStateException("payment refused");
    assertThatThrownBy(() -> JdbcTransactions.useTransaction(dataSource, connection -> {
      store.append(connection, event);
      terminate(connection);
      throw failure;
    })).isSameAs(failure);
    assertThat(failure.getSuppressed()).as("the failed rollback").isNotEmpty();
    assertThat(store.find(event.id())).isEmpty();
    assertAutoCommitRestored();
  }

  /** Ends {@code connection}'s session from another one, and waits until it is gone. */
  private static void terminate(Connection connection) throws SQLException {
    int pid;
    try (Statement s = connection.createStatement(); ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      pid = rs.getInt(1);
    }
    try (HikariDataSource admin = TestDatabase.POSTGRES.dataSource(1, null); Connection c = admin.getConnection()) {
      try (Statement s = c.createStatement()) {
        s.execute("SELECT pg_terminate_backend(" + pid + ")");
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        try (Statement s = c.createStatement();
            ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM pg_stat_activity WHERE pid = " + pid)) {
          rs.next();
          return rs.getInt(1) == 0;
        }
      });
    }
  }

  private void assertAutoCommitRestored() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      assertThat(c.getAutoCommit()).isTrue();
    }
  }

  private static OutboxEvent event() {
    return OutboxEvent.builder().aggregate("order", "o-1").topic("order.placed").payload("{}").build();
  }
}
