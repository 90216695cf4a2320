package io.mic.outbox.jdbc;

/**
 * H2 2.x, in process, for tests and demos. H2's {@code FOR UPDATE} locks every row a claim reads, so
 * concurrent claims stay disjoint but take turns. H2 reads its clock once per transaction, so an insert
 * takes {@code created_at} after the latest event of its aggregate, which, under the aggregate lock, keeps
 * commit order. The inbox uses the portable insert: H2 rolls back only the statement that meets a duplicate
 * key, and a concurrent insert of the same key waits for the other transaction to end. Its statements:
 * {@link LockingClaim}, {@link LockingMarks}, {@link H2Append} and the portable {@code InboxStatements}.
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
  public String now() {
    return "CURRENT_TIMESTAMP";
  }

  @Override
  public String plusMicros(String ts) {
    return "DATEADD(MICROSECOND, ?, " + ts + ")";
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
}
