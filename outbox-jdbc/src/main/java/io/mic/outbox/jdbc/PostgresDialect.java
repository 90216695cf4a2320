package io.mic.outbox.jdbc;

/**
 * PostgreSQL 12+: native {@code uuid} and {@code timestamptz}, the clock {@code now()} (the transaction's
 * start) and {@code clock_timestamp()} (the statement's moment), aggregates locked with advisory locks
 * rather than a lock table. Its statements: {@link PostgresClaim}, {@link PostgresMarks},
 * {@link PostgresAppend} and {@code InboxStatements.Postgres}.
 */
public class PostgresDialect implements Dialect {

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

  @Override
  public String timestampText(String ts) {
    return "to_char(" + ts + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
  }
}
