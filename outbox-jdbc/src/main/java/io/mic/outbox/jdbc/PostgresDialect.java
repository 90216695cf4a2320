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
  public String upgradeIndexesResource() {
    return "io/mic/outbox/jdbc/schema/postgresql-upgrade-lean-indexes.sql";
  }

  @Override
  public List<String> obsoleteIndexes() {
    return List.of("aggregate_idx", "dispatched_idx");
  }

  /** The primary key: the lean schema keeps no index that every mark would have to maintain. */
  @Override
  public String retentionOrder() {
    return "id";
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
  public String insert(String table, String sequences) {
    return insertOne(table, sequences, false);
  }

  @Override
  public String insertLocked(String table, String sequences) {
    return insertOne(table, sequences, true);
  }

  @Override
  public boolean insertCountsSequence() {
    return true;
  }

  /**
   * {@code INSERT … ON CONFLICT DO UPDATE} locks each counter row (waiting for a concurrent first insert of
   * the same aggregate to end), in the order bound, before the row's clock_timestamp() is read: the same
   * serialisation as {@code pg_advisory_xact_lock}, without a statement of its own and without a slot in
   * the shared lock table per aggregate (which limited one transaction to about 12,500 aggregates).
   */
  @Override
  public boolean counterLocksAggregates() {
    return true;
  }

  /**
   * One statement: the values, then the counter upsert (after the advisory lock when {@code locked}: the
   * lock sits in the upsert's FROM), then the row, whose clock_timestamp() is read in a subquery over the
   * upsert's result, so after both locks. A volatile target list keeps each subquery from being flattened.
   */
  private static String insertOne(String table, String sequences, boolean locked) {
    return "WITH v AS (SELECT CAST(? AS uuid) AS id, CAST(? AS varchar) AS aggregate_type,"
        + " CAST(? AS varchar) AS aggregate_id, CAST(? AS varchar) AS topic, CAST(? AS json) AS payload,"
        + " CAST(? AS json) AS headers, CAST(? AS integer) AS priority, CAST(? AS integer) AS schema_version,"
        + " CAST(? AS timestamptz) AS occurred_at, CAST(? AS varchar) AS trace_parent),"
        + " n AS (INSERT INTO " + sequences + " AS s (aggregate_type, aggregate_id, last_sequence)"
        + " SELECT v.aggregate_type, v.aggregate_id, 1 FROM v"
        + (locked ? ", (SELECT pg_advisory_xact_lock(hashtextextended(?, 0))) AS l" : "")
        + " ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_sequence = s.last_sequence + 1"
        + " RETURNING s.last_sequence)"
        + " INSERT INTO " + table + " (" + INSERT_COLUMNS + ") SELECT v.id, v.aggregate_type, v.aggregate_id,"
        + " v.topic, v.payload, v.headers, v.priority, c.ts, c.ts, c.last_sequence, v.schema_version,"
        + " COALESCE(v.occurred_at, c.ts), v.trace_parent"
        + " FROM v, (SELECT n.last_sequence, clock_timestamp() AS ts FROM n) AS c";
  }

  /**
   * One round trip and one plan for a batch of any size; a JDBC batch of {@link #insertAt} costs the
   * server a bind and an execute per row, which made a batch append twice as slow as this.
   */
  @Override
  public String insertArrays(String table) {
    return "INSERT INTO " + table + " (" + INSERT_COLUMNS + ") SELECT v.id, v.aggregate_type, v.aggregate_id, v.topic,"
        + " CAST(v.payload AS json), CAST(v.headers AS json), v.priority, c.ts, c.start, v.sequence, v.schema_version,"
        + " COALESCE(v.occurred_at, c.ts), v.trace_parent FROM unnest(CAST(? AS uuid[]), CAST(? AS varchar[]),"
        + " CAST(? AS varchar[]), CAST(? AS varchar[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS integer[]),"
        + " CAST(? AS bigint[]), CAST(? AS integer[]), CAST(? AS timestamptz[]), CAST(? AS varchar[]))"
        + " WITH ORDINALITY AS v(id, aggregate_type, aggregate_id, topic, payload, headers, priority, sequence,"
        + " schema_version, occurred_at, trace_parent, n)"
        + " CROSS JOIN LATERAL (SELECT CAST(? AS timestamptz) AS start,"
        + " CAST(? AS timestamptz) + (v.n - 1) * interval '1 microsecond' AS ts) AS c";
  }

  @Override
  public String statementClock() {
    return "clock_timestamp()"; // now() is the start of the caller's transaction
  }

  /**
   * One statement with three array parameters whatever the number of aggregates: the rows are upserted
   * (and locked) in the order bound. A {@code VALUES} list of three parameters per aggregate cost the
   * server a parse and a plan per batch size, and the driver 3,000 binds per 1,000 aggregates.
   */
  @Override
  public String countSequences(String sequences, int aggregates) {
    return "INSERT INTO " + sequences + " AS s (aggregate_type, aggregate_id, last_sequence)"
        + " SELECT v.t, v.i, v.n FROM unnest(CAST(? AS varchar[]), CAST(? AS varchar[]), CAST(? AS bigint[]))"
        + " WITH ORDINALITY AS v(t, i, n, k) ORDER BY v.k"
        + " ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_sequence = s.last_sequence"
        + " + EXCLUDED.last_sequence RETURNING s.aggregate_type, s.aggregate_id, s.last_sequence";
  }

  @Override
  public void bindSequenceCounts(PreparedStatement ps, List<String> types, List<String> ids, List<Long> counts)
      throws SQLException {
    ps.setArray(1, ps.getConnection().createArrayOf("varchar", types.toArray()));
    ps.setArray(2, ps.getConnection().createArrayOf("varchar", ids.toArray()));
    ps.setArray(3, ps.getConnection().createArrayOf("int8", counts.toArray()));
  }

  @Override
  public String readSequences(String sequences, int aggregates) {
    return null;
  }

  @Override
  public String listColumns() {
    return "SELECT column_name FROM information_schema.columns WHERE table_schema = COALESCE(CAST(? AS name),"
        + " current_schema()) AND table_name = ?";
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
        // heads first, then followers breadth first; the LIMIT stops the append before the followers are
        // computed at all when the heads fill the batch (they did all the work for nothing before)
        + " picked AS MATERIALIZED (SELECT id FROM ((SELECT id FROM ranked ORDER BY head_rank)"
        + " UNION ALL (SELECT id FROM followers ORDER BY pos, head_rank)) x LIMIT ?)"
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
  public String guardEnsure(String guardTable) {
    return "INSERT INTO " + guardTable + " (consumer, aggregate_type, aggregate_id, last_sequence, updated_at)"
        + " VALUES (?, ?, ?, 0, now()) ON CONFLICT (consumer, aggregate_type, aggregate_id) DO NOTHING";
  }

  @Override
  public boolean inboxRecorded(PreparedStatement insert) throws SQLException {
    return insert.executeUpdate() == 1;
  }

  private static String prefixed(String prefix) {
    return Dialect.aliased(prefix);
  }
}
