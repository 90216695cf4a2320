package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import java.io.IOException;
import java.sql.Connection;
import java.sql.SQLException;
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

  private void assertAutoCommitRestored() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      assertThat(c.getAutoCommit()).isTrue();
    }
  }

  private static OutboxEvent event() {
    return OutboxEvent.builder().aggregate("order", "o-1").topic("order.placed").payload("{}").build();
  }
}
