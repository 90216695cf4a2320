package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.internal.AppendChannel;
import io.mic.outbox.jdbc.internal.HeadersJson;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * PostgreSQL appends: an aggregate is locked by its sequence counter's row, which {@code INSERT … ON
 * CONFLICT DO UPDATE} locks (waiting for a concurrent first insert of the same aggregate to end) before the
 * row's {@code clock_timestamp()} is read: the same serialisation as an advisory lock, without a statement
 * of its own and without a slot of the shared lock table per aggregate (which limited one transaction to
 * about 12,500 aggregates). One event in one statement (counter upsert and insert), a batch in two
 * statements of arrays; inserts read {@code clock_timestamp()}, the time of the insert itself.
 */
final class PostgresAppend extends AppendStatements {
  private static final String[] ARRAY_TYPES = {"uuid", "varchar", "varchar", "varchar", "text", "text", "int4",
      "int8", "int4", "varchar", "varchar"};

  /** The single-event statement, built once: an append is hot. */
  private final String insert;

  PostgresAppend(Dialect dialect, Tables tables) {
    super(dialect, tables);
    this.insert = insertText();
  }

  /** None: the counter's row lock is the aggregate lock (see the class). */
  @Override
  String lockAggregates(int keys) {
    return null;
  }

  /**
   * Three array parameters whatever the number of aggregates, upserted (and locked) in the order bound; a
   * {@code VALUES} list of three parameters per aggregate cost a parse and a plan per batch size.
   */
  @Override
  Sql countSequences(Connection c, List<OutboxEvent> aggregates, List<Long> counts) throws SQLException {
    return Sql.of("INSERT INTO " + tables.sequences() + " AS s (aggregate_type, aggregate_id, last_sequence)"
        + " SELECT v.t, v.i, v.n FROM unnest(CAST(? AS varchar[]), CAST(? AS varchar[]), CAST(? AS bigint[]))"
        + " WITH ORDINALITY AS v(t, i, n, k) ORDER BY v.k"
        + " ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_sequence = s.last_sequence"
        + " + EXCLUDED.last_sequence RETURNING s.aggregate_type, s.aggregate_id, s.last_sequence",
        c.createArrayOf("varchar", aggregates.stream().map(OutboxEvent::aggregateType).toArray()),
        c.createArrayOf("varchar", aggregates.stream().map(OutboxEvent::aggregateId).toArray()),
        c.createArrayOf("int8", counts.toArray()));
  }

  @Override
  Sql readSequences(List<OutboxEvent> aggregates) {
    return null;
  }

  /**
   * One statement: {@link #insert} counts the event itself, and carries the notification when there is a
   * {@code channel}: a one-row {@code pg_notify} joined to it, run once per statement, so an announced append
   * costs no round trip of its own.
   */
  @Override
  void appendOne(Connection connection, OutboxEvent event, AppendChannel channel) throws SQLException {
    Sql insert = insert(event);
    if (channel != null) {
      insert = insert.plus(", (SELECT pg_notify(?, '')) AS announced", channel.name());
    }
    try (PreparedStatement ps = insert.prepare(connection, dialect)) {
      requireOneRow(ps.executeUpdate(), event);
    }
  }

  @Override
  Sql insert(OutboxEvent e) {
    return Sql.of(insert, e.id(), e.aggregateType(), e.aggregateId(), e.topic(), e.payload(),
        HeadersJson.write(e.headers()), e.priority(), e.schemaVersion(),
        Sql.orNull(e.occurredAt(), Instant.class), Sql.orNull(e.traceParent(), String.class));
  }

  /**
   * The values, then the counter upsert, then the row, whose clock_timestamp() is read in a subquery over
   * the upsert's result, so after the counter row's lock. A volatile target list keeps each subquery from
   * being flattened.
   */
  private String insertText() {
    return "WITH v AS (SELECT CAST(? AS uuid) AS id, CAST(? AS varchar) AS aggregate_type,"
        + " CAST(? AS varchar) AS aggregate_id, CAST(? AS varchar) AS topic, CAST(? AS json) AS payload,"
        + " CAST(? AS json) AS headers, CAST(? AS integer) AS priority, CAST(? AS integer) AS schema_version,"
        + " CAST(? AS timestamptz) AS occurred_at, CAST(? AS varchar) AS trace_parent),"
        + " n AS (INSERT INTO " + tables.sequences() + " AS s (aggregate_type, aggregate_id, last_sequence)"
        + " SELECT v.aggregate_type, v.aggregate_id, 1 FROM v"
        + " ON CONFLICT (aggregate_type, aggregate_id) DO UPDATE SET last_sequence = s.last_sequence + 1"
        + " RETURNING s.last_sequence)"
        + " INSERT INTO " + tables.outbox() + " (" + Sql.INSERT_COLUMNS + ") SELECT v.id, v.aggregate_type,"
        + " v.aggregate_id, v.topic, v.payload, v.headers, v.priority, c.ts, c.ts, c.last_sequence, v.schema_version,"
        + " COALESCE(v.occurred_at, c.ts), v.trace_parent"
        + " FROM v, (SELECT n.last_sequence, clock_timestamp() AS ts FROM n) AS c";
  }

  /**
   * One round trip and one plan for a batch of any size; a JDBC batch of single-row inserts costs the server
   * a bind and an execute per row, which made a batch append twice as slow as this. A null occurred_at
   * element stands for the event's created_at.
   */
  @Override
  Instant insertRows(Connection connection, Collection<OutboxEvent> events, Map<String, Long> next, Instant start)
      throws SQLException {
    int n = events.size();
    Object[][] columns = new Object[ARRAY_TYPES.length][n];
    int i = 0;
    for (OutboxEvent e : events) {
      columns[0][i] = e.id();
      columns[1][i] = e.aggregateType();
      columns[2][i] = e.aggregateId();
      columns[3][i] = e.topic();
      columns[4][i] = e.payload();
      columns[5][i] = HeadersJson.write(e.headers());
      columns[6][i] = e.priority();
      columns[7][i] = nextSequence(next, e);
      columns[8][i] = e.schemaVersion();
      columns[9][i] = e.occurredAt() == null ? null : e.occurredAt().toString(); // ISO-8601 in UTC: no zone to guess
      columns[10][i] = e.traceParent();
      i++;
    }
    Object[] values = new Object[ARRAY_TYPES.length + 2];
    for (int c = 0; c < columns.length; c++) {
      values[c] = connection.createArrayOf(ARRAY_TYPES[c], columns[c]);
    }
    values[columns.length] = start;
    values[columns.length + 1] = start;
    try (PreparedStatement ps = Sql.of("INSERT INTO " + tables.outbox() + " ("
        + Sql.INSERT_COLUMNS + ") SELECT v.id, v.aggregate_type, v.aggregate_id, v.topic, CAST(v.payload AS json),"
        + " CAST(v.headers AS json), v.priority, c.ts, c.start, v.sequence, v.schema_version,"
        + " COALESCE(v.occurred_at, c.ts), v.trace_parent FROM unnest(CAST(? AS uuid[]), CAST(? AS varchar[]),"
        + " CAST(? AS varchar[]), CAST(? AS varchar[]), CAST(? AS text[]), CAST(? AS text[]), CAST(? AS integer[]),"
        + " CAST(? AS bigint[]), CAST(? AS integer[]), CAST(? AS timestamptz[]), CAST(? AS varchar[]))"
        + " WITH ORDINALITY AS v(id, aggregate_type, aggregate_id, topic, payload, headers, priority, sequence,"
        + " schema_version, occurred_at, trace_parent, n)"
        + " CROSS JOIN LATERAL (SELECT CAST(? AS timestamptz) AS start,"
        + " CAST(? AS timestamptz) + (v.n - 1) * interval '1 microsecond' AS ts) AS c", values)
        .prepare(connection, dialect)) {
      int inserted = ps.executeUpdate();
      if (inserted != n) {
        throw new OutboxStoreException("append to " + tables.name() + " inserted " + inserted + " rows instead of "
            + n + "; roll the transaction back", null);
      }
    }
    return start.plus(n, ChronoUnit.MICROS);
  }
}
