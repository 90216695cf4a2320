package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The schema version of an outbox's tables, recorded by {@code createSchema()} in the control table's row
 * {@value #ROW} (column {@value #COLUMN}), and the refusal to dispatch from tables newer than this library
 * knows: a binary older than its schema must not claim, mark or upgrade them as it understands them.
 *
 * <p>No event topic starts with {@code '#'}, so the row pauses nothing; the pause reads leave it out. A table
 * without the row (created before versions were recorded, or under a role that cannot write it) is not refused.
 */
final class SchemaVersion {
  private static final Logger LOG = LoggerFactory.getLogger(SchemaVersion.class);
  /** The control table's row holding the version: a key no event topic can be. */
  static final String ROW = "#schema";
  static final String COLUMN = "tables_version";
  /** The reason stored on the row, which a version that predates the row lists as a pause. */
  private static final String REASON = "not a pause: the schema version of the outbox tables, recorded by"
      + " createSchema()";

  private final TableAccess access;
  private final String control;
  private final long recheckNanos;
  /** When to read the version again ({@link System#nanoTime()}), and what it refused when last read. */
  private volatile long readDue = System.nanoTime();
  private volatile SchemaTooNewException refusal;

  SchemaVersion(TableAccess access) {
    this(access, Duration.ofSeconds(ControlStatements.RECHECK_SECONDS));
  }

  /** Reads the version again at most once per {@code recheck} in {@link #requireKnown()}. */
  SchemaVersion(TableAccess access, Duration recheck) {
    this.access = access;
    this.control = access.name.sibling("control", access.dialect.identifierQuote());
    this.recheckNanos = recheck.toNanos();
  }

  /**
   * The recorded version; empty when none is recorded.
   *
   * @throws OutboxStoreException the control table or its column is missing, or this role cannot read it
   */
  OptionalInt recorded() {
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = Sql.of("SELECT " + COLUMN + " FROM " + control + " WHERE topic = ?", ROW)
          .prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return OptionalInt.empty();
        }
        int version = rs.getInt(1);
        return rs.wasNull() ? OptionalInt.empty() : OptionalInt.of(version);
      }
    });
  }

  /**
   * Fails when the recorded version is newer than {@link JdbcOutboxStore#SCHEMA_VERSION}; reads it at most once
   * per recheck interval ({@value ControlStatements#RECHECK_SECONDS} seconds in a store). A version that cannot be
   * read refuses nothing.
   *
   * @throws SchemaTooNewException naming both versions and what to do
   */
  void requireKnown() {
    long now = System.nanoTime();
    if (now - readDue >= 0) {
      refusal = refusalOf(readQuietly());
      readDue = now + recheckNanos;
    }
    SchemaTooNewException r = refusal;
    if (r != null) {
      throw r;
    }
  }

  /** Before {@code createSchema()} changes anything: refuses a newer schema, read now. */
  void requireKnownNow() {
    SchemaTooNewException r = refusalOf(readQuietly());
    if (r != null) {
      throw r;
    }
  }

  /**
   * Adds the column to a control table that lacks it and records {@link JdbcOutboxStore#SCHEMA_VERSION} unless
   * it is recorded already (then nothing is written). A role without the rights is said at WARN: the store
   * works on, unrefused.
   */
  void record() {
    try {
      addColumn();
      OptionalInt found = readQuietly();
      if (found.isPresent() && found.getAsInt() >= JdbcOutboxStore.SCHEMA_VERSION) {
        return;
      }
      access.inTransaction(c -> {
        int n;
        try (PreparedStatement ps = Sql.of("UPDATE " + control + " SET " + COLUMN + " = ? WHERE topic = ? AND ("
            + COLUMN + " IS NULL OR " + COLUMN + " < ?)", JdbcOutboxStore.SCHEMA_VERSION, ROW,
            JdbcOutboxStore.SCHEMA_VERSION).prepare(c, access.dialect)) {
          n = ps.executeUpdate();
        }
        if (n == 0 && found.isEmpty()) {
          insert(c);
        }
        return null;
      });
      readDue = System.nanoTime();
      LOG.info("outbox table {}: schema version {} recorded", access.name, JdbcOutboxStore.SCHEMA_VERSION);
    } catch (OutboxStoreException e) {
      LOG.warn("outbox table {}: cannot record schema version {} in {} ({}); run createSchema() once as the"
          + " schema's owner", access.name, JdbcOutboxStore.SCHEMA_VERSION, access.name.derivedName("control"),
          e.getMessage());
    }
  }

  private void insert(Connection c) throws SQLException {
    try (PreparedStatement ps = Sql.of("INSERT INTO " + control + " (topic, reason, paused_at, " + COLUMN
        + ") VALUES (?, ?, " + access.dialect.now() + ", ?)", ROW, REASON, JdbcOutboxStore.SCHEMA_VERSION)
        .prepare(c, access.dialect)) {
      ps.executeUpdate();
    } catch (SQLException e) {
      if (!access.dialect.isDuplicateKey(e)) { // else recorded at the same moment by another process
        throw e;
      }
    }
  }

  /** Runs {@code control-<database>-upgrade-version.sql} when the control table exists without the column. */
  private void addColumn() {
    List<String> columns = access.inAutoCommit(c -> {
      List<String> found = new ArrayList<>();
      try (PreparedStatement ps = Catalog.of(access.dialect).columns(access.name.schema(),
          access.name.derivedName("control")).prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          found.add(rs.getString(1));
        }
      }
      return found;
    });
    if (!columns.isEmpty() && columns.stream().noneMatch(COLUMN::equalsIgnoreCase)) {
      access.execute(access.ddl(upgradeResource(access.dialect), JdbcOutboxStore.DEFAULT_TABLE));
    }
  }

  static String upgradeResource(Dialect dialect) {
    return OutboxControl.schemaResource(dialect).replace(".sql", "-upgrade-version.sql");
  }

  private OptionalInt readQuietly() {
    try {
      return recorded();
    } catch (OutboxStoreException e) {
      LOG.debug("outbox table {}: no schema version to read: {}", access.name, e.getMessage());
      return OptionalInt.empty();
    }
  }

  private SchemaTooNewException refusalOf(OptionalInt version) {
    if (version.isEmpty() || version.getAsInt() <= JdbcOutboxStore.SCHEMA_VERSION) {
      return null;
    }
    return new SchemaTooNewException(access.name.toString(), version.getAsInt());
  }
}
