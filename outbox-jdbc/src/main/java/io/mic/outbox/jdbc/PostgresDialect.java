package io.mic.outbox.jdbc;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.UUID;

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

  @Override
  public String upgradeIndexesResource() {
    return "io/mic/outbox/jdbc/schema/postgresql-upgrade-lean-indexes.sql";
  }

  @Override
  public List<String> obsoleteIndexes() {
    return List.of("aggregate_idx", "dispatched_idx");
  }

  /**
   * One parameter ({@link #ID_BYTES}): the statement's text, and so its plan, does not depend on how many. A
   * subquery, so that PostgreSQL hashes the ids once per execution in every plan: {@code NOT (id = ANY(?))}
   * is hashed only in a plan made for the bound array, and a generic plan (which the server may keep for a
   * prepared statement) compares each row with every id, one after the other. The ids are never null, so
   * {@code NOT IN} means none of them.
   */
  @Override
  public String notAmong(String column, int n) {
    return "uuid_send(" + column + ") NOT IN (" + ID_BYTES + ")";
  }

  @Override
  public int bindIds(PreparedStatement ps, int from, List<UUID> ids) throws SQLException {
    ps.setBytes(from, Ids.bytes(ids));
    return from + 1;
  }

  /** The primary key: the lean schema keeps no index that every mark would have to maintain. */
  @Override
  public String retentionOrder() {
    return "id";
  }

  @Override
  public String listIndexes(int tables) {
    return "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = COALESCE(CAST(? AS name),"
        + " current_schema()) AND tablename IN " + Sql.placeholders(tables);
  }

  @Override
  public String listColumns() {
    return "SELECT column_name FROM information_schema.columns WHERE table_schema = COALESCE(CAST(? AS name),"
        + " current_schema()) AND table_name = ?";
  }

  @Override
  public boolean usesLockTable() {
    return false;
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
  public String minusMicros(String ts) {
    return ts + " - ? * interval '1 microsecond'";
  }

  @Override
  public String microsSince(String ts) {
    return "CAST(EXTRACT(EPOCH FROM (now() - " + ts + ")) * 1000000 AS bigint)";
  }

  /**
   * Sessions holding a snapshot ({@code backend_xmin}) or a transaction id hold back the xmin horizon, and
   * so vacuum of every table in the database; walsenders (database NULL) do too with hot_standby_feedback,
   * and prepared transactions until they are committed. Other roles' sessions show only to a role with
   * {@code pg_read_all_stats}.
   */
  @Override
  public String oldestTransactionMicros() {
    return "SELECT CAST(EXTRACT(EPOCH FROM (clock_timestamp() - min(t))) * 1000000 AS bigint) FROM ("
        + "SELECT xact_start AS t FROM pg_stat_activity WHERE (datname = current_database() OR datname IS NULL)"
        + " AND (backend_xmin IS NOT NULL OR backend_xid IS NOT NULL) AND pid <> pg_backend_pid()"
        + " UNION ALL SELECT prepared FROM pg_prepared_xacts WHERE database = current_database()) AS x";
  }

  @Override
  public String timestampText(String ts) {
    return "to_char(" + ts + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
  }
}
