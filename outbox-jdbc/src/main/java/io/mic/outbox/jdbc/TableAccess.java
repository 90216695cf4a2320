package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.internal.TableName;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/**
 * One validated table on a {@link DataSource}, with the short transactions the inbox and the operations
 * classes run on it. Failures become {@link OutboxStoreException}s naming the table.
 */
final class TableAccess {
  final DataSource dataSource;
  final Dialect dialect;
  final TableName name;
  /** The name quoted for SQL. */
  final String table;
  private final String kind;

  TableAccess(String kind, DataSource dataSource, Dialect dialect, TableName name) {
    this.kind = kind;
    this.dataSource = dataSource;
    this.dialect = dialect;
    this.name = name;
    this.table = name.quoted(dialect.identifierQuote());
  }

  /** The dialect given, or the one detected from a connection of {@code dataSource}. */
  static Dialect dialect(DataSource dataSource, Dialect given) {
    if (dataSource == null) {
      throw new InvalidConfigurationException("dataSource is required: .dataSource(hikariDataSource)");
    }
    if (given != null) {
      return given;
    }
    try (Connection c = dataSource.getConnection()) {
      return Dialect.detect(c.getMetaData());
    } catch (SQLException e) {
      throw new OutboxStoreException("cannot connect to detect the database: " + e.getMessage(), e);
    }
  }

  /**
   * Fails unless {@code connection} is inside a transaction the caller controls; {@code refusal} says why
   * that matters for the operation and what to do instead.
   */
  static void requireTransaction(Connection connection, String refusal) {
    Objects.requireNonNull(connection, "connection");
    try {
      if (connection.getAutoCommit()) {
        throw new OutboxException(refusal);
      }
    } catch (SQLException e) {
      throw new OutboxException("cannot read the connection's auto-commit mode: " + e.getMessage(), e);
    }
  }

  static long micros(Duration d) {
    return d.toNanos() / 1_000;
  }

  /** A retention in microseconds; it must be positive. */
  static long retentionMicros(Duration retention) {
    Objects.requireNonNull(retention, "retention");
    if (retention.isNegative() || retention.isZero()) {
      throw new IllegalArgumentException("retention must be > 0, was " + retention);
    }
    return micros(retention);
  }

  /**
   * The DDL of {@code resource}, comments removed, written for table {@code defaultTable}, rewritten for
   * this table: indexes {@code <defaultTable>_<name>_idx} and tables beside it {@code <defaultTable>_<name>}.
   */
  String ddl(String resource, String defaultTable) {
    try (InputStream in = TableAccess.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new OutboxException("schema resource " + resource + " is missing from the classpath");
      }
      String ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8).replaceAll("(?m)--.*$", "");
      // the resource names its table <defaultTable>, indexes <defaultTable>_<name>_idx, other tables <defaultTable>_<name>
      Matcher m = Pattern.compile("\\b" + defaultTable + "(_\\w+)?\\b").matcher(ddl);
      StringBuilder out = new StringBuilder();
      char q = dialect.identifierQuote();
      while (m.find()) {
        String suffix = m.group(1) == null ? null : m.group(1).substring(1);
        String name = suffix == null ? table
            : suffix.endsWith("_idx") ? this.name.derived(suffix, q) : this.name.sibling(suffix, q);
        m.appendReplacement(out, Matcher.quoteReplacement(name));
      }
      return m.appendTail(out).toString();
    } catch (IOException e) {
      throw new OutboxException("cannot read schema resource " + resource, e);
    }
  }

  void execute(String ddl) {
    inAutoCommit(c -> {
      try (Statement s = c.createStatement()) {
        for (String statement : ddl.split(";\\s*(?:\\n|$)")) {
          if (!statement.isBlank()) {
            s.execute(statement);
          }
        }
      }
      return null;
    });
  }

  /** Runs one statement in its own short transaction and returns its update count. */
  int update(String statement, Binder binder) {
    return inTransaction(c -> {
      try (PreparedStatement ps = c.prepareStatement(statement)) {
        binder.bind(ps);
        return ps.executeUpdate();
      }
    });
  }

  /** Work on a connection of its own, committed whatever the pool's default. */
  <T> T inAutoCommit(Work<T> work) {
    return withConnection(c -> {
      boolean autoCommit = c.getAutoCommit();
      try {
        T result = work.run(c);
        if (!autoCommit) {
          c.commit();
        }
        return result;
      } catch (SQLException | RuntimeException e) {
        if (!autoCommit) {
          c.rollback();
        }
        throw e;
      }
    });
  }

  /**
   * Work in one short transaction at the dialect's isolation (READ COMMITTED: no gap locks on InnoDB);
   * the connection's settings are restored after.
   */
  <T> T inTransaction(Work<T> work) {
    return withConnection(c -> {
      boolean autoCommit = c.getAutoCommit();
      int isolation = c.getTransactionIsolation();
      try {
        if (isolation != dialect.isolation()) {
          c.setTransactionIsolation(dialect.isolation());
        }
        c.setAutoCommit(false);
        T result = work.run(c);
        c.commit();
        return result;
      } catch (SQLException | RuntimeException e) {
        c.rollback();
        throw e;
      } finally {
        c.setAutoCommit(autoCommit);
        if (isolation != dialect.isolation()) {
          c.setTransactionIsolation(isolation);
        }
      }
    });
  }

  private <T> T withConnection(Work<T> work) {
    try (Connection c = dataSource.getConnection()) {
      return work.run(c);
    } catch (SQLException e) {
      throw failed(e);
    }
  }

  OutboxStoreException failed(SQLException e) {
    return new OutboxStoreException(kind + " table " + name + ": " + e.getMessage() + " (SQLState "
        + e.getSQLState() + ")", e);
  }

  @FunctionalInterface
  interface Work<T> {
    T run(Connection c) throws SQLException;
  }

  @FunctionalInterface
  interface Binder {
    void bind(PreparedStatement ps) throws SQLException;
  }
}
