package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxAppender;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Collection;
import java.util.Objects;

/**
 * A {@link JdbcOutboxStore} bound to the transaction in progress, as an {@link OutboxAppender}: each append
 * asks {@code currentConnection} for the connection of the caller's transaction and appends on it. The
 * connection is never committed, rolled back or closed here; it must not be in auto-commit mode.
 *
 * <pre>{@code
 * ThreadLocal<Connection> current = new ThreadLocal<>();     // or your framework's current connection
 * OutboxAppender outbox = JdbcOutboxAppender.of(store, current::get);
 * try (Connection c = dataSource.getConnection()) {
 *   c.setAutoCommit(false);
 *   current.set(c);
 *   orderService.place(order);                              // calls outbox.append(event)
 *   c.commit();
 * } finally {
 *   current.remove();
 * }
 * }</pre>
 */
public final class JdbcOutboxAppender implements OutboxAppender {
  /** The connection of the transaction in progress; may throw what a connection lookup throws. */
  @FunctionalInterface
  public interface CurrentConnection {
    Connection get() throws SQLException;
  }

  private final JdbcOutboxStore store;
  private final CurrentConnection currentConnection;

  private JdbcOutboxAppender(JdbcOutboxStore store, CurrentConnection currentConnection) {
    this.store = store;
    this.currentConnection = currentConnection;
  }

  /** @throws InvalidConfigurationException if an argument is missing */
  public static JdbcOutboxAppender of(JdbcOutboxStore store, CurrentConnection currentConnection) {
    if (store == null) {
      throw new InvalidConfigurationException("store is required: JdbcOutboxAppender.of(store, currentConnection)");
    }
    if (currentConnection == null) {
      throw new InvalidConfigurationException("currentConnection is required: JdbcOutboxAppender.of(store,"
          + " () -> connectionOfTheCurrentTransaction)");
    }
    return new JdbcOutboxAppender(store, currentConnection);
  }

  /** @see JdbcOutboxStore#append(Connection, OutboxEvent) */
  @Override
  public void append(OutboxEvent event) {
    Objects.requireNonNull(event, "event");
    store.append(connection(), event);
  }

  /** @see JdbcOutboxStore#append(Connection, Collection) */
  @Override
  public void append(Collection<OutboxEvent> events) {
    Objects.requireNonNull(events, "events");
    store.append(connection(), events);
  }

  private Connection connection() {
    Connection c;
    try {
      c = currentConnection.get();
    } catch (SQLException e) {
      throw new OutboxStoreException("cannot get the current transaction's connection to append to "
          + store.table() + ": " + e.getMessage(), e);
    }
    if (c == null) {
      throw new OutboxException("no transaction in progress: the current connection is null. Append inside a"
          + " transaction, on the connection that also writes the business change");
    }
    return c;
  }
}
