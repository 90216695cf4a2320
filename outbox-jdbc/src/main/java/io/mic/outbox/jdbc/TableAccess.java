package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.internal.Causes;
import io.mic.outbox.jdbc.internal.TableName;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.function.IntSupplier;
import java.util.function.LongConsumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One validated table on a {@link DataSource}, with the short transactions the inbox and the operations
 * classes run on it. Failures become {@link OutboxStoreException}s naming the table.
 */
final class TableAccess {
  private static final Logger LOG = LoggerFactory.getLogger(TableAccess.class);
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

  /**
   * Gives {@code c} its auto-commit mode back after a transaction of the caller's. Fails only on a connection
   * that broke, which the pool discards: throwing would hide the work's own exception, or report a
   * transaction that committed as failed, to be run again.
   */
  static void restoreAutoCommit(Connection c, boolean autoCommit) {
    try {
      c.setAutoCommit(autoCommit);
    } catch (SQLException e) {
      LOG.debug("cannot restore auto-commit on a connection that is being closed: {}", e.getMessage());
    }
  }

  static long micros(Duration d) {
    return d.toNanos() / 1_000;
  }

  /** A retention in microseconds; zero means "everything up to now", a negative one is refused. */
  static long retentionMicros(Duration retention) {
    Objects.requireNonNull(retention, "retention");
    if (retention.isNegative()) {
      throw new InvalidConfigurationException("retention must be >= 0, was " + retention
          + ": Duration.ZERO takes everything up to now");
    }
    return micros(retention);
  }

  /**
   * Runs {@code batch}, one statement deleting at most {@code batchSize} rows in its own short transaction,
   * until one deletes fewer, telling {@code progress} the running total after each; returns the total.
   */
  static long deleteInBatches(IntSupplier batch, int batchSize, LongConsumer progress) {
    long total = 0;
    int deleted;
    do {
      deleted = batch.getAsInt();
      total += deleted;
      progress.accept(total);
    } while (deleted >= batchSize);
    return total;
  }

  /**
   * The DDL of {@code resource}, comments removed, written for table {@code defaultTable}, rewritten for
   * this table: indexes {@code <defaultTable>_<name>_idx} and tables beside it {@code <defaultTable>_<name>}.
   */
  String ddl(String resource, String defaultTable) {
    return schema(resource, defaultTable).ddl();
  }

  /**
   * Creates what {@code resource} describes, unless every table and index of it exists already: then no
   * DDL runs, so a role with row rights only can call this at every start.
   *
   * @return {@code false} when everything existed
   */
  boolean createSchema(String resource, String defaultTable) {
    Schema schema = schema(resource, defaultTable);
    List<String> missing = missing(schema);
    if (missing != null && missing.isEmpty()) {
      return false;
    }
    try {
      execute(schema.ddl());
      return true;
    } catch (OutboxStoreException e) {
      throw new OutboxStoreException(e.getMessage() + "; " + (missing == null ? "the schema may be incomplete"
          : "missing: " + String.join(", ", missing)) + ". A role without DDL rights can use existing tables"
          + " only: run createSchema() once as the schema's owner, or apply schemaDdl() in a migration", e);
    }
  }

  /**
   * Runs the upgrade script {@code resource} when the table lacks one of {@code columns} (or the catalog
   * cannot tell); else no DDL runs, so a role with row rights only can call this. {@code true} when it ran.
   */
  boolean upgrade(String resource, String defaultTable, List<String> columns) {
    Set<String> present = catalogNames(Catalog.of(dialect).columns(name.schema(), name.table()),
        row -> row.getString(1), "upgrade");
    List<String> missing = present == null ? null
        : columns.stream().filter(col -> present.stream().noneMatch(col::equalsIgnoreCase)).toList();
    return runUpgrade(resource, defaultTable, missing, "the columns may be missing", "missing columns");
  }

  /** Runs {@code resource} unless the catalog found nothing to upgrade ({@code null}: it could not tell). */
  private boolean runUpgrade(String resource, String defaultTable, List<String> found, String unknown,
      String known) {
    if (found != null && found.isEmpty()) {
      return false;
    }
    try {
      execute(ddl(resource, defaultTable));
      return true;
    } catch (OutboxStoreException e) {
      throw new OutboxStoreException(e.getMessage() + "; " + (found == null ? unknown
          : known + ": " + String.join(", ", found)) + ". Run createSchema() once as the schema's owner, or"
          + " apply " + resource + " in a migration (docs/operations.md)", e);
    }
  }

  /** What a catalog query's row names: a column, a table's index. */
  @FunctionalInterface
  private interface RowName {
    String of(ResultSet row) throws SQLException;
  }

  /**
   * The names of a catalog query's rows; {@code null} when the catalog cannot be read, and then the DDL
   * ({@code whatRuns}) runs and says what is wrong.
   */
  private Set<String> catalogNames(Sql query, RowName rowName, String whatRuns) {
    Set<String> found = new LinkedHashSet<>();
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = query.prepare(c, dialect)) {
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.add(rowName.of(rs));
        }
      }
      if (!c.getAutoCommit()) {
        c.rollback();
      }
    } catch (SQLException e) {
      LOG.debug("{} table {}: cannot read the catalog, running the {}: {}", kind, name, whatRuns, e.getMessage());
      return null;
    }
    return found;
  }

  /** What {@code resource} creates: its DDL for this table, the tables, and the indexes on this table. */
  private record Schema(String ddl, Set<String> tables, Set<String> indexes) {}

  private Schema schema(String resource, String defaultTable) {
    try (InputStream in = TableAccess.class.getClassLoader().getResourceAsStream(resource)) {
      if (in == null) {
        throw new OutboxException("schema resource " + resource + " is missing from the classpath");
      }
      String ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8).replaceAll("(?m)--.*$", "");
      // the resource names its table <defaultTable>, indexes <defaultTable>_<name>_idx, functions and triggers
      // <defaultTable>_<name>_fn and _trg, other tables <defaultTable>_<name>
      Matcher m = Pattern.compile("\\b" + defaultTable + "(_\\w+)?\\b").matcher(ddl);
      StringBuilder out = new StringBuilder();
      Set<String> tables = new LinkedHashSet<>(List.of(name.table()));
      Set<String> indexes = new LinkedHashSet<>();
      char q = dialect.identifierQuote();
      while (m.find()) {
        String suffix = m.group(1) == null ? null : m.group(1).substring(1);
        String replacement = table;
        if (suffix != null && suffix.endsWith("_trg")) {
          replacement = name.derived(suffix, q); // a trigger is named without its schema
        } else if (suffix != null && suffix.endsWith("_fn")) {
          replacement = name.sibling(suffix, q); // a function beside the table, not a table
        } else if (suffix != null && suffix.endsWith("_idx") && droppedAt(ddl, m.start())) {
          replacement = name.sibling(suffix, q); // DROP and ALTER INDEX name the index with its schema
        } else if (suffix != null && suffix.endsWith("_idx")) {
          indexes.add(name.derivedName(suffix));
          replacement = name.derived(suffix, q);
        } else if (suffix != null) {
          tables.add(name.derivedName(suffix));
          replacement = name.sibling(suffix, q);
        }
        m.appendReplacement(out, Matcher.quoteReplacement(replacement));
      }
      return new Schema(m.appendTail(out).toString(), tables, indexes);
    } catch (IOException e) {
      throw new OutboxException("cannot read schema resource " + resource, e);
    }
  }

  private static boolean droppedAt(String ddl, int at) {
    String before = ddl.substring(Math.max(0, at - 40), at).toUpperCase(java.util.Locale.ROOT);
    return before.matches("(?s).*(DROP|ALTER)\\s+INDEX\\s+(IF\\s+EXISTS\\s+)?$");
  }

  /**
   * Runs {@link Catalog#upgradeIndexesResource()} when one of the indexes it replaces exists on the table, or
   * the catalog cannot tell; else no DDL runs. {@code true} when the script ran.
   */
  boolean upgradeIndexes(String defaultTable) {
    Catalog catalog = Catalog.of(dialect);
    String resource = catalog.upgradeIndexesResource();
    if (resource == null) {
      return false;
    }
    Set<String> obsolete = catalog.obsoleteIndexes().stream().map(name::derivedName)
        .collect(java.util.stream.Collectors.toSet());
    Set<String> present = catalogNames(catalog.indexes(name.schema(), List.of(name.table())),
        row -> row.getString(2), "index upgrade");
    List<String> found = present == null ? null : present.stream().filter(obsolete::contains).toList();
    return runUpgrade(resource, defaultTable, found, "old indexes may exist", "old indexes");
  }

  /**
   * Runs {@link Catalog#upgradeParkingResource()} when the table's claim index holds parked events too, or the
   * catalog cannot tell; else no DDL runs. {@code true} when the script ran.
   */
  boolean upgradeParking(String defaultTable) {
    Catalog catalog = Catalog.of(dialect);
    String resource = catalog.upgradeParkingResource();
    if (resource == null) {
      return false;
    }
    Set<String> stale = catalogNames(catalog.claimIndexesWithParked(name.schema(), name.table(),
        name.derivedName("claim_idx")), row -> row.getString(1), "claim index upgrade");
    return runUpgrade(resource, defaultTable, stale == null ? null : List.copyOf(stale),
        "the claim index may hold parked events", "claim index holding parked events");
  }

  /**
   * The tables ({@code table <name>}) and indexes ({@code index <name>}) of {@code resource} that do not exist;
   * {@code null} when the catalog cannot tell.
   */
  List<String> missingFrom(String resource, String defaultTable) {
    return missing(schema(resource, defaultTable));
  }

  /**
   * The tables and indexes of {@code schema} that do not exist, from the catalog; {@code null} when the
   * dialect cannot tell or the catalog cannot be read (the DDL then runs and says what is wrong).
   */
  private List<String> missing(Schema schema) {
    List<String> tables = List.copyOf(schema.tables());
    Set<String> found = catalogNames(Catalog.of(dialect).indexes(name.schema(), tables),
        row -> row.getString(1) + "." + row.getString(2), "DDL"); // table.index
    if (found == null) {
      return null;
    }
    List<String> missing = new ArrayList<>();
    tables.stream().filter(t -> found.stream().noneMatch(i -> i.startsWith(t + ".")))
        .forEach(t -> missing.add("table " + t));
    schema.indexes().stream().filter(i -> !found.contains(name.table() + "." + i))
        .forEach(i -> missing.add("index " + i));
    return missing;
  }

  void execute(String ddl) {
    inAutoCommit(c -> {
      try (Statement s = c.createStatement()) {
        for (String statement : statements(ddl)) {
          s.execute(statement);
        }
      }
      return null;
    });
  }

  /** The statements of a script: each ends with a semicolon at the end of a line. */
  static List<String> statements(String ddl) {
    return java.util.Arrays.stream(ddl.split(";\\s*(?:\\n|$)")).filter(st -> !st.isBlank()).toList();
  }

  /** Runs one statement in its own short transaction and returns its update count. */
  int update(Sql statement) {
    return inTransaction(c -> {
      try (PreparedStatement ps = statement.prepare(c, dialect)) {
        return ps.executeUpdate();
      }
    });
  }

  /** {@link Dialect#deleteFirst} on this table: {@code where} carries its values, and the text around it the limit. */
  int deleteFirst(String key, Sql where, String order, int limit) {
    String text = dialect.deleteFirst(table, key, where.text(), order);
    int at = text.indexOf(where.text());
    return update(Sql.of(text.substring(0, at)).plus(where).plus(text.substring(at + where.text().length()), limit));
  }

  /** Work on a connection of its own, committed whatever the pool's default. */
  <T> T inAutoCommit(Work<T> work) {
    return withConnection(autoCommitted(work));
  }

  /** {@link #inAutoCommit}, each call on the connection {@link #answeredWithin answered within} {@code within}. */
  <T> T inAutoCommit(Duration within, Work<T> work) {
    return withConnection(answeredWithin(within, autoCommitted(work)));
  }

  private static <T> Work<T> autoCommitted(Work<T> work) {
    return c -> {
      boolean autoCommit = c.getAutoCommit();
      try {
        T result = work.run(c);
        if (!autoCommit) {
          c.commit();
        }
        return result;
      } catch (SQLException | RuntimeException e) {
        if (!autoCommit) {
          rollback(c, e);
        }
        throw e;
      }
    };
  }

  /**
   * Work in one short transaction at the dialect's isolation (READ COMMITTED: no gap locks on InnoDB);
   * the connection's settings are restored after.
   */
  <T> T inTransaction(Work<T> work) {
    return withConnection(transacted(work));
  }

  /** {@link #inTransaction}, each call on the connection {@link #answeredWithin answered within} {@code within}. */
  <T> T inTransaction(Duration within, Work<T> work) {
    return withConnection(answeredWithin(within, transacted(work)));
  }

  private <T> Work<T> transacted(Work<T> work) {
    return c -> {
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
        rollback(c, e);
        throw e;
      } finally {
        restoreAutoCommit(c, autoCommit);
        if (isolation != dialect.isolation()) {
          restoreIsolation(c, isolation);
        }
      }
    };
  }

  /**
   * {@code work} with the connection's network timeout at {@code within}, restored after: a server that does not
   * answer in time (a partition, a frozen server, which send no error) fails the call and the driver closes the
   * connection, instead of a background thread waiting until TCP gives up.
   */
  private static <T> Work<T> answeredWithin(Duration within, Work<T> work) {
    return c -> {
      int before = c.getNetworkTimeout();
      c.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, Math.max(1, within.toMillis())));
      try {
        return work.run(c);
      } finally {
        try {
          c.setNetworkTimeout(Runnable::run, before);
        } catch (SQLException e) {
          LOG.debug("cannot restore the network timeout of a connection that is being closed: {}", e.getMessage());
        }
      }
    };
  }

  /** Rolls back after {@code cause}; a rollback that fails too (the session ended) must not replace it. */
  static void rollback(Connection c, Throwable cause) {
    try {
      c.rollback();
    } catch (SQLException e) {
      cause.addSuppressed(e);
    }
  }

  /** {@link #restoreAutoCommit}'s twin for the isolation level. */
  private static void restoreIsolation(Connection c, int isolation) {
    try {
      c.setTransactionIsolation(isolation);
    } catch (SQLException e) {
      LOG.debug("cannot restore the isolation level on a connection that is being closed: {}", e.getMessage());
    }
  }

  private <T> T withConnection(Work<T> work) {
    try (Connection c = dataSource.getConnection()) {
      return work.run(c);
    } catch (SQLException e) {
      throw failed(e);
    }
  }

  OutboxStoreException failed(SQLException e) {
    return new OutboxStoreException(kind + " table " + name + ": " + Causes.describe(e) + " (SQLState "
        + e.getSQLState() + ")", e);
  }

  @FunctionalInterface
  interface Work<T> {
    T run(Connection c) throws SQLException;
  }
}
