package io.mic.outbox.jdbc;

/**
 * PostgreSQL 12+: claims in one statement ({@code FOR UPDATE SKIP LOCKED} in a materialized CTE, then
 * {@code UPDATE … RETURNING}), batched marks with {@code id = ANY(?)}, aggregate locks with
 * {@code pg_advisory_xact_lock}, times from {@code now()} (statement start in auto-commit) and
 * {@code clock_timestamp()} for inserts.
 */
public class PostgresDialect implements Dialect {

  static final String COLUMNS = "id, aggregate_type, aggregate_id, topic, payload, headers, priority, status,"
      + " attempts, next_attempt_at, lease_owner, lease_until, created_at, dispatched_at, last_error";

  private static final String LIVE = "status IN ('PENDING', 'PROCESSING')";
  private static final String DUE = "o.status = 'PENDING' AND o.next_attempt_at <= now()";
  private static final String CLAIMABLE =
      "((o.status = 'PENDING' AND o.next_attempt_at <= now()) OR (o.status = 'PROCESSING' AND o.lease_until < now()))";
  private static final String ORDER = " ORDER BY o.priority DESC, o.created_at, o.id";

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
  public char identifierQuote() {
    return '"';
  }

  @Override
  public String insert(String table) {
    return "INSERT INTO " + table + " (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
        + " created_at, next_attempt_at) VALUES (?, ?, ?, ?, CAST(? AS json), CAST(? AS json), ?,"
        + " clock_timestamp(), clock_timestamp())";
  }

  @Override
  public String insertLocked(String table) {
    // The lock sits in a FROM subquery, so it is taken before clock_timestamp() is read for the row.
    return "INSERT INTO " + table + " (id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
        + " created_at, next_attempt_at) SELECT ?, ?, ?, ?, CAST(? AS json), CAST(? AS json), ?,"
        + " clock_timestamp(), clock_timestamp() FROM (SELECT pg_advisory_xact_lock(hashtextextended(?, 0))) AS l";
  }

  @Override
  public String lockAggregates() {
    return "SELECT pg_advisory_xact_lock(h) FROM (SELECT DISTINCT hashtextextended(k, 0) AS h"
        + " FROM unnest(CAST(? AS text[])) AS k) AS keys ORDER BY h";
  }

  /** Only the oldest live event of its aggregate; a leased or retry-waiting head hides the rest. */
  protected String isHead(String table) {
    return " AND NOT EXISTS (SELECT 1 FROM " + table + " p WHERE p.aggregate_type = o.aggregate_type"
        + " AND p.aggregate_id = o.aggregate_id AND p." + LIVE
        + " AND (p.created_at, p.id) < (o.created_at, o.id))";
  }

  @Override
  public String fetchPending(String table, boolean ordered) {
    return "SELECT " + COLUMNS + " FROM " + table + " o WHERE " + DUE + (ordered ? isHead(table) : "")
        + ORDER + " LIMIT ?";
  }

  @Override
  public String claim(String table, boolean ordered) {
    return "WITH picked AS MATERIALIZED (SELECT o.id FROM " + table + " o WHERE " + CLAIMABLE
        + (ordered ? isHead(table) : "") + ORDER + " LIMIT ? FOR UPDATE OF o SKIP LOCKED)"
        + " UPDATE " + table + " t SET status = 'PROCESSING', attempts = t.attempts + 1, lease_owner = ?,"
        + " lease_until = now() + ? * interval '1 microsecond' FROM picked WHERE t.id = picked.id"
        + " RETURNING " + prefixed("t.");
  }

  @Override
  public String claimRuns(String table) {
    // Heads are locked with SKIP LOCKED; the events behind them are read unlocked (nobody else can claim
    // them while their head is live) and locked by the UPDATE, which checks them again.
    return "WITH heads AS MATERIALIZED (SELECT o.id, o.aggregate_type, o.aggregate_id, o.created_at, o.priority"
        + " FROM " + table + " o WHERE " + CLAIMABLE + isHead(table) + ORDER
        + " LIMIT ? FOR UPDATE OF o SKIP LOCKED),"
        + " ranked AS (SELECT h.*, row_number() OVER (ORDER BY h.priority DESC, h.created_at, h.id) AS head_rank"
        + " FROM heads h),"
        + " followers AS (SELECT r.head_rank, f.id, f.pos FROM ranked r CROSS JOIN LATERAL ("
        + "SELECT n.id, row_number() OVER w AS pos,"
        + " bool_and(n.status = 'PENDING' AND n.next_attempt_at <= now()) OVER w AS contiguous"
        + " FROM (SELECT m.id, m.status, m.next_attempt_at, m.created_at FROM " + table + " m"
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
  public String markDispatchedClaimed(String table) {
    return "UPDATE " + table + " SET status = 'DISPATCHED', dispatched_at = now(), lease_owner = NULL,"
        + " lease_until = NULL WHERE id = ANY(?) AND status = 'PROCESSING' AND lease_owner = ? RETURNING id";
  }

  @Override
  public String markDispatchedUnclaimed(String table) {
    return "UPDATE " + table + " SET status = 'DISPATCHED', dispatched_at = now(), attempts = attempts + 1"
        + " WHERE id = ANY(?) AND status = 'PENDING' RETURNING id";
  }

  @Override
  public String scheduleRetry(String table, boolean claimed) {
    return "UPDATE " + table + " SET status = 'PENDING', next_attempt_at = now() + ? * interval '1 microsecond',"
        + " last_error = ?, lease_owner = NULL, lease_until = NULL" + attemptsOf(claimed, "+")
        + " WHERE id = ? AND " + fence(claimed);
  }

  @Override
  public String markDead(String table, boolean claimed) {
    return "UPDATE " + table + " SET status = 'DLQ', last_error = ?, lease_owner = NULL, lease_until = NULL"
        + attemptsOf(claimed, "+") + " WHERE id = ? AND " + fence(claimed);
  }

  @Override
  public String release(String table, boolean claimed) {
    // the claim counted an attempt that never happened: give it back
    return "UPDATE " + table + " SET status = 'PENDING', next_attempt_at = now() + ? * interval '1 microsecond',"
        + " lease_owner = NULL, lease_until = NULL" + (claimed ? ", attempts = attempts - 1" : "")
        + " WHERE id = ANY(?) AND " + fence(claimed) + " RETURNING id";
  }

  @Override
  public String renewLeases(String table) {
    return "UPDATE " + table + " SET lease_until = now() + ? * interval '1 microsecond'"
        + " WHERE id = ANY(?) AND " + fence(true) + " RETURNING id";
  }

  @Override
  public String find(String table) {
    return "SELECT " + COLUMNS + " FROM " + table + " WHERE id = ?";
  }

  @Override
  public String countByStatus(String table) {
    return "SELECT status, count(*) FROM " + table + " GROUP BY status";
  }

  @Override
  public String oldestPendingAgeMicros(String table) {
    return "SELECT CAST(EXTRACT(EPOCH FROM (now() - min(created_at))) * 1000000 AS bigint) FROM " + table
        + " WHERE " + LIVE;
  }

  @Override
  public String shiftTimes(String table) {
    return "UPDATE " + table + " SET created_at = created_at - ? * interval '1 microsecond',"
        + " next_attempt_at = next_attempt_at - ? * interval '1 microsecond',"
        + " lease_until = lease_until - ? * interval '1 microsecond',"
        + " dispatched_at = dispatched_at - ? * interval '1 microsecond'";
  }

  private static String fence(boolean claimed) {
    return claimed ? "status = 'PROCESSING' AND lease_owner = ?" : "status = 'PENDING'";
  }

  private static String attemptsOf(boolean claimed, String op) {
    return claimed ? "" : ", attempts = attempts " + op + " 1"; // without a claim, the outcome counts the attempt
  }

  private static String prefixed(String prefix) {
    return prefix + COLUMNS.replace(", ", ", " + prefix);
  }
}
