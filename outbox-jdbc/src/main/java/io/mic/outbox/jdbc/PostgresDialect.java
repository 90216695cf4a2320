package io.mic.outbox.jdbc;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;

/**
 * PostgreSQL 12+: native {@code uuid} and {@code timestamptz}, the clock {@code now()} (the transaction's
 * start) and {@code clock_timestamp()} (the statement's moment), aggregates locked by the sequence
 * counter's row lock rather than a lock table. Its statements: {@link PostgresClaim}, {@link PostgresMarks},
 * {@link PostgresAppend} and {@code InboxStatements.Postgres}.
 */
public class PostgresDialect implements Dialect {

  /** The ids bound as one {@code bytea} ({@link Ids#bytes}), one row {@code g} per id, its bytes {@link #PIECE}. */
  private static final String PIECES =
      " FROM (SELECT CAST(? AS bytea) AS b) p, generate_series(0, length(b) / 16 - 1) g";
  private static final String PIECE = "substring(b FROM g * 16 + 1 FOR 16)";

  /** The ids as rows of {@code bytea}: compared with {@code uuid_send(id)}, they need no parsing at all. */
  static final String ID_BYTES = "SELECT " + PIECE + PIECES;

  /** The same ids as a {@code uuid[]}, for {@code id = ANY(…)}, which finds each by the primary key. */
  static final String ID_ARRAY = "ARRAY(SELECT CAST(encode(" + PIECE + ", 'hex') AS uuid)" + PIECES + ")";

  protected PostgresDialect() {}

  @Override
  public String name() {
    return "PostgreSQL";
  }

  @Override
  public String schemaResource() {
    return "io/mic/outbox/jdbc/schema/postgresql.sql";
  }

  @Override
  public String inboxSchemaResource() {
    return "io/mic/outbox/jdbc/schema/inbox-postgresql.sql";
  }

  /** The primary key: the lean schema keeps no index that every mark would have to maintain. */
  @Override
  public String retentionOrder() {
    return "id";
  }

  @Override
  public String now() {
    return "now()";
  }

  /**
   * Through {@link Timestamp}: a {@code timestamptz} read in binary is one number of microseconds, which the
   * driver turns into a {@code Timestamp} directly. Read as an {@code OffsetDateTime}, every value also built
   * the UTC offset's rules anew on Java 17: five times per row, a quarter of a read thread's CPU samples.
   */
  @Override
  public Instant getInstant(ResultSet rs, int index) throws SQLException {
    Timestamp t = rs.getTimestamp(index);
    return t == null ? null : t.toInstant();
  }

  @Override
  public String statementClock() {
    return "clock_timestamp()"; // now() is the start of the caller's transaction
  }

  @Override
  public String plusMicros(String ts) {
    return ts + " + ? * interval '1 microsecond'";
  }

  @Override
  public String microsSince(String ts) {
    return "CAST(EXTRACT(EPOCH FROM (now() - " + ts + ")) * 1000000 AS bigint)";
  }

  @Override
  public String timestampText(String ts) {
    return "to_char(" + ts + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
  }
}
