package io.mic.outbox.jdbc;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * PostgreSQL 12+: a claim is one statement ({@code FOR UPDATE SKIP LOCKED} in a materialized CTE, then
 * {@code UPDATE … RETURNING}), batched marks take an array ({@code id = ANY(?)}) and return what they
 * changed, appends lock aggregates with {@code pg_advisory_xact_lock}, and inserts read
 * {@code clock_timestamp()}, the time of the insert itself.
 */
public class PostgresDialect implements Dialect {
  private static final String LIVE = "status IN ('PENDING', 'PROCESSING')";

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
  public String listIndexes(int tables) {
    return "SELECT tablename, indexname FROM pg_indexes WHERE schemaname = COALESCE(CAST(? AS name),"
        + " current_schema()) AND tablename IN " + Dialect.placeholders(tables);
  }

  @Override
  public boolean updateReturning() {
    return true;
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
  public String jsonParam() {
    return "CAST(? AS json)";
  }

  @Override
  public String insert(String table) {
    return "INSERT INTO " + table + " (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
        + " created_at, next_attempt_at) VALUES (?, ?, ?, ?, CAST(? AS json), CAST(? AS json), ?,"
        + " clock_timestamp(), clock_timestamp())";
  }

  @Override
  public String statementClock() {
    return "clock_timestamp()"; // now() is the start of the caller's transaction
  }

  @Override
  public String insertLocked(String table) {
    // The lock sits in a FROM subquery, so it is taken before clock_timestamp() is read for the row.
    return "INSERT INTO " + table + " (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
        + " created_at, next_attempt_at) SELECT ?, ?, ?, ?, CAST(? AS json), CAST(? AS json), ?,"
        + " clock_timestamp(), clock_timestamp() FROM (SELECT pg_advisory_xact_lock(hashtextextended(?, 0))) AS l";
  }

  @Override
  public String lockAggregates(String lockTable, int keys) {
    return "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(k, 0) AS h"
        + " FROM unnest(CAST(? AS text[])) AS k) AS keys ORDER BY h";
  }

  @Override
  public void bindLockKeys(PreparedStatement ps, List<String> keys) throws SQLException {
    ps.setArray(1, ps.getConnection().createArrayOf("text", keys.toArray()));
  }

  @Override
  public String claim(String table, boolean ordered, int pausedTopics) {
    return "WITH picked AS MATERIALIZED (SELECT o.id FROM " + table + " o WHERE " + claimable()
        + skipTopics("o", pausedTopics) + (ordered ? isHead(table) : "") + " ORDER BY " + dispatchOrder() + " LIMIT ? FOR UPDATE OF o SKIP LOCKED)"
        + " UPDATE " + table + " t SET status = 'PROCESSING', attempts = t.attempts + 1, lease_owner = ?,"
        + " lease_until = now() + ? * interval '1 microsecond' FROM picked WHERE t.id = picked.id"
        + " RETURNING " + prefixed("t.");
  }

  @Override
  public String claimRuns(String table, int pausedTopics) {
    // Heads are locked with SKIP LOCKED; the events behind them are read unlocked (nobody else can claim
    // them while their head is live) and locked by the UPDATE, which checks them again.
    return "WITH heads AS MATERIALIZED (SELECT o.id, o.aggregate_type, o.aggregate_id, o.created_at, o.priority"
        + " FROM " + table + " o WHERE " + claimable() + skipTopics("o", pausedTopics) + isHead(table)
        + " ORDER BY " + dispatchOrder()
        + " LIMIT ? FOR UPDATE OF o SKIP LOCKED),"
        + " ranked AS (SELECT h.*, row_number() OVER (ORDER BY h.priority DESC, h.created_at, h.id) AS head_rank"
        + " FROM heads h),"
        + " followers AS (SELECT r.head_rank, f.id, f.pos FROM ranked r CROSS JOIN LATERAL ("
        + "SELECT n.id, row_number() OVER w AS pos,"
        + " bool_and(n.status = 'PENDING' AND n.next_attempt_at <= now()" + skipTopics("n", pausedTopics)
        + ") OVER w AS contiguous"
        + " FROM (SELECT m.id, m.status, m.next_attempt_at, m.created_at, m.topic FROM " + table + " m"
        + " WHERE m.aggregate_type = r.aggregate_type AND m.aggregate_id = r.aggregate_id AND m." + LIVE
        + " AND (m.created_at, m.id) > (r.created_at, r.id) ORDER BY m.created_at, m.id LIMIT ?) n"
        + " WINDOW w AS (ORDER BY n.created_at, n.id)) f WHERE f.contiguous),"
        + " picked AS MATERIALIZED (SELECT id FROM (SELECT id, head_rank, 0 AS pos FROM ranked"
        + " UNION ALL SELECT id, head_rank, pos FROM followers) x ORDER BY pos, head_rank LIMIT ?)"
        + " UPDATE " + table + " t SET status = 'PROCESSING', attempts = t.attempts + 1, lease_owner = ?,"
        + " lease_until = now() + ? * interval '1 microsecond' FROM picked WHERE t.id = picked.id"
        + " AND ((t.status = 'PENDING' AND t.next_attempt_at <= now())"
        + " OR (t.status = 'PROCESSING' AND t.lease_until < now()))"
        + " RETURNING " + prefixed("t.");
  }

  @Override
  public String markDispatchedReturning(String table, boolean claimed) {
    return "UPDATE " + table + " SET status = 'DISPATCHED', dispatched_at = now(),"
        + " lease_until = NULL" + (claimed ? "" : ", attempts = attempts + 1")
        + " WHERE id = ANY(?) AND " + Dialect.fence(claimed) + " RETURNING id";
  }

  @Override
  public String releaseReturning(String table, boolean claimed) {
    // the claim counted an attempt that never happened: give it back
    return "UPDATE " + table + " SET status = 'PENDING', next_attempt_at = now() + ? * interval '1 microsecond',"
        + " lease_owner = NULL, lease_until = NULL" + (claimed ? ", attempts = attempts - 1" : "")
        + " WHERE id = ANY(?) AND " + Dialect.fence(claimed) + " RETURNING id";
  }

  @Override
  public String renewReturning(String table) {
    return "UPDATE " + table + " SET lease_until = now() + ? * interval '1 microsecond'"
        + " WHERE id = ANY(?) AND " + Dialect.fence(true) + " RETURNING id";
  }

  @Override
  public String timestampText(String ts) {
    return "to_char(" + ts + " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')";
  }

  @Override
  public String inboxSchemaResource() {
    return "io/mic/outbox/jdbc/schema/inbox-postgresql.sql";
  }

  @Override
  public String inboxInsert(String table) {
    // a failing statement would abort the caller's whole transaction, so a duplicate must not fail
    return "INSERT INTO " + table + " (consumer, event_id, processed_at) VALUES (?, ?, now())"
        + " ON CONFLICT (consumer, event_id) DO NOTHING";
  }

  @Override
  public boolean inboxRecorded(PreparedStatement insert) throws SQLException {
    return insert.executeUpdate() == 1;
  }

  private static String prefixed(String prefix) {
    return Dialect.aliased(prefix);
  }
}
