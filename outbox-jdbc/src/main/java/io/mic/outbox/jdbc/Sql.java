package io.mic.outbox.jdbc;

import java.util.Collections;

/** SQL text every database shares; the statement classes compose it with their dialect's fragments. */
final class Sql {
  /** The columns every read of events returns, in this order (see {@link EventRows}). */
  static final String COLUMNS = "id, aggregate_type, aggregate_id, topic, payload, headers, priority, status, attempts,"
      + " next_attempt_at, lease_owner, lease_until, created_at, dispatched_at, last_error,"
      + " sequence, schema_version, occurred_at, trace_parent";

  /** The columns an append writes, in this order. */
  static final String INSERT_COLUMNS = "id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
      + " created_at, next_attempt_at, sequence, schema_version, occurred_at, trace_parent";

  private Sql() {}

  /** {@link #COLUMNS}, each with {@code prefix}, e.g. {@code o.}. */
  static String aliased(String prefix) {
    return prefix + COLUMNS.replace(", ", ", " + prefix);
  }

  /** {@code (?, ?, …)} with {@code n} parameters. */
  static String placeholders(int n) {
    return "(" + repeat(n, "?") + ")";
  }

  /** {@code item} {@code n} times, separated by commas. */
  static String repeat(int n, String item) {
    return String.join(", ", Collections.nCopies(n, item));
  }

  /**
   * Whether a row is still held by the caller: {@code PROCESSING} under its lease (one parameter: the owner)
   * when {@code claimed}, else still {@code PENDING}.
   */
  static String fence(boolean claimed) {
    return claimed ? "status = 'PROCESSING' AND lease_owner = ?" : "status = 'PENDING'";
  }
}
