package io.mic.outbox.jdbc;

/**
 * The conditions every read of dispatchable events shares, written with one dialect's fragments for one
 * outbox: the outbox's alias is {@code o}.
 */
final class DispatchSql {
  final Dialect dialect;
  final Tables tables;

  DispatchSql(Dialect dialect, Tables tables) {
    this.dialect = dialect;
    this.tables = tables;
  }

  /** A due {@code PENDING} event. */
  String due() {
    return "o.status = 'PENDING' AND o.next_attempt_at <= " + dialect.now();
  }

  /** A due {@code PENDING} event, or a {@code PROCESSING} one whose lease expired. */
  String claimable() {
    return claimable("o");
  }

  String claimable(String alias) {
    String now = dialect.now();
    return "((" + alias + ".status = 'PENDING' AND " + alias + ".next_attempt_at <= " + now + ")"
        + " OR (" + alias + ".status = 'PROCESSING' AND " + alias + ".lease_until < " + now + "))";
  }

  /** Only the oldest live event of its aggregate: a leased or retry-waiting head hides the rest. */
  String isHead() {
    return " AND NOT EXISTS (SELECT 1 FROM " + tables.outbox() + " p WHERE p.aggregate_type = o.aggregate_type"
        + " AND p.aggregate_id = o.aggregate_id AND p.status IN ('PENDING', 'PROCESSING')"
        + " AND (p.created_at, p.id) < (o.created_at, o.id))";
  }

  /**
   * Skips the request's paused topics, bound as parameters (see {@link #bindPaused}); the control table's
   * pauses are among them once {@link ControlStatements#merge} has read it.
   */
  String notPaused(String alias, ReadRequest r) {
    if (r.honourControl()) {
      throw new IllegalStateException("read the control table first: ControlStatements.merge");
    }
    int n = r.pausedTopics().size();
    return n == 0 ? "" : " AND " + alias + ".topic NOT IN " + Sql.placeholders(n);
  }

  /** Leaves out the events the reader is still publishing (see {@link #bindInFlight}). */
  String notInFlight(ReadRequest r) {
    return r.inFlight().isEmpty() ? "" : " AND " + dialect.notAmong("o.id", r.inFlight().size());
  }

  /**
   * Only what follows the request's position in dispatch order, within its priority, so that the read starts
   * there in the claim index instead of stepping over the events before it (see {@link #bindAfter}).
   */
  String after(ReadRequest r) {
    return r.after() == null ? "" : " AND " + dialect.afterInPriority();
  }

  /** Binds the request's position from {@code from}, if any; returns the next index. */
  int bindAfter(java.sql.PreparedStatement ps, int from, ReadRequest r) throws java.sql.SQLException {
    return r.after() == null ? from : dialect.bindAfterInPriority(ps, from, r.after());
  }

  /** Binds the request's events in flight from {@code from}, if any; returns the next index. */
  int bindInFlight(java.sql.PreparedStatement ps, int from, ReadRequest r) throws java.sql.SQLException {
    return r.inFlight().isEmpty() ? from : dialect.bindIds(ps, from, r.inFlight());
  }

  /** Binds the request's paused topics from {@code from}; returns the next index. */
  static int bindPaused(java.sql.PreparedStatement ps, int from, ReadRequest r) throws java.sql.SQLException {
    int i = from;
    for (String topic : r.pausedTopics()) {
      ps.setString(i++, topic);
    }
    return i;
  }
}
