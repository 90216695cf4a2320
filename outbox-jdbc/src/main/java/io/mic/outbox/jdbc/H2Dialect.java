package io.mic.outbox.jdbc;

/**
 * H2 2.x, in process, for tests and demos. H2's {@code FOR UPDATE} locks every row a claim reads, so
 * concurrent claims stay disjoint but take turns. H2 reads its clock once per transaction, so an insert
 * takes {@code created_at} after the latest event of its aggregate, which, under the aggregate lock, keeps
 * commit order. The inbox uses the portable insert: H2 rolls back only the statement that meets a duplicate
 * key, and a concurrent insert of the same key waits for the other transaction to end.
 */
public class H2Dialect implements Dialect {

  protected H2Dialect() {}

  @Override
  public String name() {
    return "H2";
  }

  @Override
  public String schemaResource() {
    return "io/mic/outbox/jdbc/schema/h2.sql";
  }

  @Override
  public String listIndexes(int tables) {
    return "SELECT TABLE_NAME, INDEX_NAME FROM INFORMATION_SCHEMA.INDEXES WHERE TABLE_SCHEMA ="
        + " COALESCE(?, CURRENT_SCHEMA) AND TABLE_NAME IN " + Dialect.placeholders(tables);
  }

  @Override
  public String now() {
    return "CURRENT_TIMESTAMP";
  }

  @Override
  public String plusMicros(String ts) {
    return "DATEADD(MICROSECOND, ?, " + ts + ")";
  }

  @Override
  public String minusMicros(String ts) {
    return "DATEADD(MICROSECOND, -CAST(? AS BIGINT), " + ts + ")";
  }

  @Override
  public String microsSince(String ts) {
    return "DATEDIFF(MICROSECOND, " + ts + ", CURRENT_TIMESTAMP)";
  }

  @Override
  public String timestampText(String ts) {
    return "FORMATDATETIME(" + ts + ", 'yyyy-MM-dd''T''HH:mm:ss.SSSSSS''Z''', 'en', 'UTC')";
  }

  @Override
  public String deleteFirst(String table, String key, String where, String order) {
    // H2 may evaluate an IN (… ORDER BY … LIMIT n) subquery more than once while deleting; with ties in the
    // order the evaluations disagree and fewer than n rows go. Its own limit has no order, which only
    // changes which matching rows a batch takes first.
    return "DELETE FROM " + table + " WHERE " + where + " FETCH FIRST ? ROWS ONLY";
  }

  @Override
  public String inboxSchemaResource() {
    return "io/mic/outbox/jdbc/schema/inbox-h2.sql";
  }

  @Override
  public String guardEnsure(String guardTable) {
    // MERGE … KEY waits for a concurrent creation of the same row, then updates it to the same key
    return "MERGE INTO " + guardTable + " (consumer, aggregate_type, aggregate_id)"
        + " KEY (consumer, aggregate_type, aggregate_id) VALUES (?, ?, ?)";
  }

  @Override
  public String insert(String table, String sequences) {
    return "INSERT INTO " + table + " (" + INSERT_COLUMNS + ") SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ts, ts,"
        + " (SELECT last_sequence FROM " + sequences + " WHERE aggregate_type = ?2 AND aggregate_id = ?3), ?8,"
        + " COALESCE(CAST(?9 AS TIMESTAMP(6) WITH TIME ZONE), ts), ?10 FROM (SELECT"
        + " GREATEST(CURRENT_TIMESTAMP, COALESCE(DATEADD(MICROSECOND, 1, MAX(created_at)), CURRENT_TIMESTAMP))"
        + " AS ts FROM " + table + " WHERE aggregate_type = ?2 AND aggregate_id = ?3) AS clock";
  }

  @Override
  public boolean clockAdvancesInTransactions() {
    return false;
  }

  @Override
  public String insertAt(String table) {
    // as insert: never before the latest event of the aggregate, which a transaction clock cannot promise
    String given = "CAST(?8 AS TIMESTAMP(6) WITH TIME ZONE)";
    return "INSERT INTO " + table + " (" + INSERT_COLUMNS + ") SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ts,"
        + " CAST(?9 AS TIMESTAMP(6) WITH TIME ZONE), ?10, ?11, CAST(?12 AS TIMESTAMP(6) WITH TIME ZONE), ?13"
        + " FROM (SELECT GREATEST(" + given + ", COALESCE(DATEADD(MICROSECOND, 1, MAX(created_at)), " + given + "))"
        + " AS ts FROM " + table + " WHERE aggregate_type = ?2 AND aggregate_id = ?3) AS clock";
  }

  /**
   * H2's {@code MERGE … USING} fails with a duplicate key when two transactions create the same row, while
   * {@code MERGE … KEY} waits and then updates: so the rows are created first, the counting merge then
   * only updates.
   */
  @Override
  public String ensureSequences(String sequences, int aggregates) {
    return "MERGE INTO " + sequences + " (aggregate_type, aggregate_id) KEY (aggregate_type, aggregate_id) VALUES "
        + String.join(", ", java.util.Collections.nCopies(aggregates, "(?, ?)"));
  }

  @Override
  public String countSequences(String sequences, int aggregates) {
    return "MERGE INTO " + sequences + " s USING (VALUES " + String.join(", ", java.util.Collections.nCopies(
        aggregates, "(CAST(? AS VARCHAR(255)), CAST(? AS VARCHAR(255)), CAST(? AS BIGINT))"))
        + ") AS v(t, i, n) ON s.aggregate_type = v.t AND s.aggregate_id = v.i"
        + " WHEN MATCHED THEN UPDATE SET last_sequence = s.last_sequence + v.n"
        + " WHEN NOT MATCHED THEN INSERT (aggregate_type, aggregate_id, last_sequence) VALUES (v.t, v.i, v.n)";
  }

  @Override
  public String listColumns() {
    return "SELECT COLUMN_NAME FROM INFORMATION_SCHEMA.COLUMNS WHERE TABLE_SCHEMA = COALESCE(?, CURRENT_SCHEMA)"
        + " AND TABLE_NAME = ?";
  }

  @Override
  public String lockAggregates(String lockTable, int keys) {
    return "MERGE INTO " + lockTable + " (lock_key) KEY (lock_key) VALUES "
        + String.join(", ", java.util.Collections.nCopies(keys, "(?)"));
  }
}
