package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.internal.HeadersJson;
import java.sql.Connection;
import java.time.Instant;
import java.util.List;

/**
 * MariaDB and MySQL appends: aggregates locked by upserting their rows of {@code <table>_locks} (an
 * exclusive row lock held until the transaction ends), counters upserted with
 * {@code ON DUPLICATE KEY UPDATE}, {@code UTC_TIMESTAMP(6)} read once when the insert starts, after the
 * lock and count statements before it.
 */
final class MariaDbAppend extends AppendStatements {

  MariaDbAppend(Dialect dialect, Tables tables) {
    super(dialect, tables);
  }

  @Override
  String lockAggregates(int keys) {
    return "INSERT INTO " + tables.locks() + " (lock_key) VALUES " + Sql.repeat(keys, "(?)")
        + " ON DUPLICATE KEY UPDATE lock_key = lock_key";
  }

  @Override
  Sql countSequences(Connection c, List<OutboxEvent> aggregates, List<Long> counts) {
    return Sql.of("INSERT INTO " + tables.sequences() + " (aggregate_type, aggregate_id, last_sequence) VALUES "
        + Sql.repeat(aggregates.size(), "(?, ?, ?)")
        + " ON DUPLICATE KEY UPDATE last_sequence = last_sequence + VALUES(last_sequence)",
        typesAndIds(aggregates, counts));
  }

  @Override
  Sql insert(OutboxEvent e) {
    return Sql.of("INSERT INTO " + tables.outbox() + " (" + Sql.INSERT_COLUMNS + ") SELECT v.id, v.aggregate_type,"
        + " v.aggregate_id, v.topic, v.payload, v.headers, v.priority, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6),"
        + " s.last_sequence, v.schema_version, COALESCE(v.occurred_at, UTC_TIMESTAMP(6)), v.trace_parent"
        + " FROM (SELECT ? AS id, ? AS aggregate_type, ? AS aggregate_id, ? AS topic, ? AS payload, ? AS headers,"
        + " ? AS priority, ? AS schema_version, ? AS occurred_at, ? AS trace_parent) AS v JOIN " + tables.sequences()
        + " s ON s.aggregate_type = v.aggregate_type AND s.aggregate_id = v.aggregate_id", e.id(), e.aggregateType(),
        e.aggregateId(), e.topic(), e.payload(), HeadersJson.write(e.headers()), e.priority(), e.schemaVersion(),
        Sql.orNull(e.occurredAt(), Instant.class), Sql.orNull(e.traceParent(), String.class));
  }
}
