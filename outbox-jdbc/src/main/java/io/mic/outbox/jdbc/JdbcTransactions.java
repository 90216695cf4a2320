package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.internal.Causes;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * Runs a callback in one JDBC transaction, for applications without a transaction framework: the business
 * change and {@link JdbcOutboxStore#append(Connection, io.mic.outbox.OutboxEvent)} commit together, or
 * roll back together when the callback throws.
 *
 * <pre>{@code
 * JdbcTransactions.useTransaction(dataSource, connection -> {
 *   insertOrder(connection, order);
 *   store.append(connection, OutboxEvent.builder()
 *       .aggregate("order", order.id()).topic("order.placed").payload(order.json()).build());
 * });
 * }</pre>
 *
 * <p>The callback must not commit, roll back or close the connection. A runtime exception it throws is
 * rethrown as is after the rollback; a checked one is wrapped in an {@link OutboxException}. The
 * connection goes back to the pool in auto-commit mode, as it came.
 */
public final class JdbcTransactions {

  /** Work that returns a value. */
  @FunctionalInterface
  public interface Callback<T> {
    T apply(Connection connection) throws Exception;
  }

  /** Work without a result. */
  @FunctionalInterface
  public interface Work {
    void run(Connection connection) throws Exception;
  }

  private JdbcTransactions() {}

  /** Runs {@code work} in a transaction and returns its result after the commit. */
  public static <T> T inTransaction(DataSource dataSource, Callback<T> work) {
    Objects.requireNonNull(dataSource, "dataSource");
    Objects.requireNonNull(work, "work");
    try (Connection connection = dataSource.getConnection()) {
      boolean autoCommit = connection.getAutoCommit();
      connection.setAutoCommit(false);
      try {
        T result = run(connection, work);
        commit(connection);
        return result;
      } finally {
        TableAccess.restoreAutoCommit(connection, autoCommit);
      }
    } catch (SQLException e) {
      throw new OutboxStoreException("cannot open or reset the transaction's connection: " + e.getMessage(), e);
    }
  }

  /** Runs {@code work} in a transaction. */
  public static void useTransaction(DataSource dataSource, Work work) {
    Objects.requireNonNull(work, "work");
    inTransaction(dataSource, connection -> {
      work.run(connection);
      return null;
    });
  }

  private static <T> T run(Connection connection, Callback<T> work) {
    try {
      return work.apply(connection);
    } catch (Exception e) {
      TableAccess.rollback(connection, e);
      if (e instanceof RuntimeException runtime) {
        throw runtime;
      }
      throw new OutboxException("the transaction's work failed and was rolled back: " + e.getClass().getName(), e);
    } catch (Error e) {
      TableAccess.rollback(connection, e);
      throw e;
    }
  }

  private static void commit(Connection connection) {
    try {
      connection.commit();
    } catch (SQLException e) {
      TableAccess.rollback(connection, e);
      SQLException refused = Causes.withoutValues(e); // a deferred constraint's details quote the row
      throw new OutboxStoreException("commit failed, nothing was written: " + refused.getMessage(), refused);
    }
  }
}
