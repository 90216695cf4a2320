package io.mic.outbox.jdbc;

import io.mic.outbox.jdbc.internal.Causes;
import io.mic.outbox.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.function.Function;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A table bound to its database on first use: the dialect given to the builder, or detected from a
 * connection once the database answers, then what {@code bind} makes of the table on it (its statements).
 * An application may start before its database: {@link #tryNow()} at {@code build()} binds if it can and
 * never fails for an unreachable database; every use before the database answers fails with the
 * driver's reason and is retried by the next.
 */
final class Binding<T> {
  private static final Logger LOG = LoggerFactory.getLogger(Binding.class);

  private final String kind;
  private final DataSource dataSource;
  private final Dialect given;
  private final TableName name;
  private final Function<TableAccess, T> bind;
  private volatile T bound;

  Binding(String kind, DataSource dataSource, Dialect given, TableName name, Function<TableAccess, T> bind) {
    this.kind = kind;
    this.dataSource = dataSource;
    this.given = given;
    this.name = name;
    this.bind = bind;
  }

  /**
   * @throws OutboxStoreException if the dialect must be detected and the database is unreachable
   * @throws UnsupportedDatabaseException if the database answers and is not supported
   */
  T get() {
    T b = bound;
    return b != null ? b : bindNow();
  }

  /** What the table is bound to, or {@code null} before its first use. */
  T bound() {
    return bound;
  }

  /** Binds now if the database answers; else logs why and leaves it to the first use. */
  Binding<T> tryNow() {
    try {
      get();
    } catch (OutboxStoreException e) {
      LOG.warn("{} table {}: {}; the dialect will be detected on first use", kind, name, e.getMessage());
    }
    return this;
  }

  private synchronized T bindNow() {
    if (bound == null) {
      Dialect chosen = given != null ? given : detect();
      if (given == null) {
        LOG.info("{} table {}: detected dialect {}", kind, name, chosen.name());
      }
      bound = bind.apply(new TableAccess(kind, dataSource, chosen, name));
    }
    return bound;
  }

  private Dialect detect() {
    try (Connection c = dataSource.getConnection()) {
      return Dialect.detect(c.getMetaData());
    } catch (SQLException e) {
      throw new OutboxStoreException("cannot connect to detect the database: " + Causes.describe(e), e);
    }
  }
}
