package io.mic.outbox.jdbc;

import io.mic.outbox.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;

/**
 * Makes time pass for a test by moving every stored time of a table back, through the test's own
 * connection: the stores read their clock from the database, which a test cannot set.
 */
final class StoredTimes {
  private static final String[] OUTBOX_TIMES = {"created_at", "occurred_at", "next_attempt_at", "lease_until",
      "dispatched_at"};

  private StoredTimes() {}

  /** Every time of the store's outbox moves back by {@code d}, as if {@code d} had passed. */
  static void shift(DataSource ds, JdbcOutboxStore store, Duration d) {
    shift(ds, store.dialect(), store.table(), d, "", OUTBOX_TIMES);
  }

  /**
   * The same on PostgreSQL for the rows no transaction holds: the rows of claims held by transactions stay
   * as they are until their outcomes, which their transactions write.
   */
  static void shiftUnlocked(DataSource ds, JdbcOutboxStore store, Duration d) {
    String quoted = TableName.parse("table", store.table()).quoted('"');
    shift(ds, store.dialect(), store.table(), d, " WHERE id IN (SELECT id FROM " + quoted + " FOR UPDATE SKIP LOCKED)",
        OUTBOX_TIMES);
  }

  /** Every {@code processed_at} of the inbox moves back by {@code d}. */
  static void shift(DataSource ds, JdbcInbox inbox, Duration d) {
    shift(ds, inbox.dialect(), inbox.table(), d, "", "processed_at");
  }

  private static void shift(DataSource ds, Dialect dialect, String table, Duration d, String where,
      String... columns) {
    String quoted = TableName.parse("table", table).quoted(dialect.identifierQuote());
    StringBuilder sql = new StringBuilder("UPDATE ").append(quoted).append(" SET ");
    for (int i = 0; i < columns.length; i++) {
      sql.append(i == 0 ? "" : ", ").append(columns[i]).append(" = ").append(dialect.plusMicros(columns[i]));
    }
    sql.append(where);
    try (Connection c = ds.getConnection(); PreparedStatement ps = c.prepareStatement(sql.toString())) {
      boolean autoCommit = c.getAutoCommit();
      for (int i = 1; i <= columns.length; i++) {
        ps.setLong(i, -d.toNanos() / 1_000);
      }
      ps.executeUpdate();
      if (!autoCommit) {
        c.commit();
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot shift the times of " + table, e);
    }
  }
}
