package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.internal.HeadersJson;
import java.sql.Connection;
import java.time.Instant;
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
  Sql insert(OutboxEvent e) {
    return event(e).plus(" ts, ts, (SELECT last_sequence FROM " + tables.sequences() + " WHERE aggregate_type = ?"
        + " AND aggregate_id = ?), ?, COALESCE(CAST(? AS TIMESTAMP(6) WITH TIME ZONE), ts), ?", e.aggregateType(),
        e.aggregateId(), e.schemaVersion(), Sql.orNull(e.occurredAt(), Instant.class),
        Sql.orNull(e.traceParent(), String.class))
        .plus(clockAfterTheAggregate(e, Sql.of("CURRENT_TIMESTAMP")));
  }

  @Override
  boolean clockAdvancesInTransactions() {
    return false;
  }

  /** As {@link #insert}: never before the latest event of the aggregate, which a transaction clock cannot promise. */
  @Override
  Sql insertAt(OutboxEvent e, Instant createdAt, Instant due, long sequence) {
    return event(e).plus(" ts, CAST(? AS TIMESTAMP(6) WITH TIME ZONE), ?, ?, CAST(? AS TIMESTAMP(6) WITH TIME ZONE), ?",
        due, sequence, e.schemaVersion(), e.occurredAt() != null ? e.occurredAt() : createdAt,
        Sql.orNull(e.traceParent(), String.class))
        .plus(clockAfterTheAggregate(e, Sql.of("CAST(? AS TIMESTAMP(6) WITH TIME ZONE)", createdAt)));
  }

  /** The insert up to the event's own columns, id to priority, and the comma after them. */
  private Sql event(OutboxEvent e) {
    return Sql.of("INSERT INTO " + tables.outbox() + " (" + Sql.INSERT_COLUMNS + ") SELECT ?, ?, ?, ?, ?, ?, ?,",
        e.id(), e.aggregateType(), e.aggregateId(), e.topic(), e.payload(), HeadersJson.write(e.headers()),
        e.priority());
  }

  /** {@code ts}: {@code clock}, or a microsecond after the aggregate's latest event if that is later. */
  private Sql clockAfterTheAggregate(OutboxEvent e, Sql clock) {
    return Sql.of(" FROM (SELECT GREATEST(").plus(clock).plus(", COALESCE(DATEADD(MICROSECOND, 1, MAX(created_at)), ")
        .plus(clock).plus(")) AS ts FROM " + tables.outbox() + " WHERE aggregate_type = ? AND aggregate_id = ?)"
            + " AS clock", e.aggregateType(), e.aggregateId());
  }
}
