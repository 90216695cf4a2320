package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.sql.Connection;
import java.util.List;

/**
 * H2 appends. H2 reads its clock once per transaction, so an insert takes {@code created_at} after the
 * latest event of its aggregate, which, under the aggregate lock, keeps commit order. Aggregates are locked
 * with {@code MERGE … KEY} on {@code <table>_locks}.
 */
final class H2Append extends AppendStatements {

  H2Append(Dialect dialect, Tables tables) {
    super(dialect, tables);
  }

  @Override
  String lockAggregates(int keys) {
    return "MERGE INTO " + tables.locks() + " (lock_key) KEY (lock_key) VALUES " + Sql.repeat(keys, "(?)");
  }

  /**
   * H2's {@code MERGE … USING} fails with a duplicate key when two transactions create the same row, while
   * {@code MERGE … KEY} waits and then updates: so the rows are created first, the counting merge then only
   * updates.
   */
  @Override
  Sql ensureSequences(List<OutboxEvent> aggregates) {
    return Sql.of("MERGE INTO " + tables.sequences() + " (aggregate_type, aggregate_id) KEY (aggregate_type,"
        + " aggregate_id) VALUES " + Sql.repeat(aggregates.size(), "(?, ?)"), typesAndIds(aggregates, null));
  }

  @Override
  Sql countSequences(Connection c, List<OutboxEvent> aggregates, List<Long> counts) {
    return Sql.of("MERGE INTO " + tables.sequences() + " s USING (VALUES "
        + Sql.repeat(aggregates.size(), "(CAST(? AS VARCHAR(255)), CAST(? AS VARCHAR(255)), CAST(? AS BIGINT))")
        + ") AS v(t, i, n) ON s.aggregate_type = v.t AND s.aggregate_id = v.i"
        + " WHEN MATCHED THEN UPDATE SET last_sequence = s.last_sequence + v.n"
        + " WHEN NOT MATCHED THEN INSERT (aggregate_type, aggregate_id, last_sequence) VALUES (v.t, v.i, v.n)",
        typesAndIds(aggregates, counts));
  }

  @Override
  String insert() {
    String table = tables.outbox();
    return "INSERT INTO " + table + " (" + Sql.INSERT_COLUMNS + ") SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ts, ts,"
        + " (SELECT last_sequence FROM " + tables.sequences() + " WHERE aggregate_type = ?2 AND aggregate_id = ?3),"
        + " ?8, COALESCE(CAST(?9 AS TIMESTAMP(6) WITH TIME ZONE), ts), ?10 FROM (SELECT"
        + " GREATEST(CURRENT_TIMESTAMP, COALESCE(DATEADD(MICROSECOND, 1, MAX(created_at)), CURRENT_TIMESTAMP))"
        + " AS ts FROM " + table + " WHERE aggregate_type = ?2 AND aggregate_id = ?3) AS clock";
  }

  @Override
  boolean clockAdvancesInTransactions() {
    return false;
  }

  /** As {@link #insert}: never before the latest event of the aggregate, which a transaction clock cannot promise. */
  @Override
  String insertAt() {
    String table = tables.outbox();
    String given = "CAST(?8 AS TIMESTAMP(6) WITH TIME ZONE)";
    return "INSERT INTO " + table + " (" + Sql.INSERT_COLUMNS + ") SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ts,"
        + " CAST(?9 AS TIMESTAMP(6) WITH TIME ZONE), ?10, ?11, CAST(?12 AS TIMESTAMP(6) WITH TIME ZONE), ?13"
        + " FROM (SELECT GREATEST(" + given + ", COALESCE(DATEADD(MICROSECOND, 1, MAX(created_at)), " + given + "))"
        + " AS ts FROM " + table + " WHERE aggregate_type = ?2 AND aggregate_id = ?3) AS clock";
  }
}
