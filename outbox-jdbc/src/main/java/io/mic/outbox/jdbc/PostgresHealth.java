package io.mic.outbox.jdbc;

import io.mic.outbox.jdbc.OutboxDoctor.Check;
import java.sql.Array;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The checks of {@link OutboxDoctor} that only PostgreSQL answers: autovacuum and dead tuples of the outbox
 * table ({@code pg_class}, {@code pg_stat_user_tables}), the session holding the xmin horizon
 * ({@code pg_stat_activity}, {@code pg_prepared_xacts}), and indexes left invalid by a failed
 * {@code CREATE INDEX CONCURRENTLY}.
 */
final class PostgresHealth {
  /** The settings docs/operations.md recommends for a queue table. */
  static final String RECOMMENDED = "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000,"
      + " autovacuum_analyze_scale_factor = 0.02, autovacuum_vacuum_cost_delay = 1";

  private final TableAccess access;

  PostgresHealth(TableAccess access) {
    this.access = access;
  }

  /** {@code indexes}, unless an index of the table is invalid. */
  Check invalidIndexesOr(Check indexes) {
    List<String> invalid = access.inAutoCommit(c -> {
      List<String> names = new ArrayList<>();
      try (PreparedStatement ps = Sql.of("SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid"
          + " WHERE i.indrelid = CAST(? AS regclass) AND NOT i.indisvalid ORDER BY 1", access.table)
          .prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
      return names;
    });
    if (invalid.isEmpty() || indexes.verdict() == OutboxDoctor.Verdict.FAIL) {
      return indexes;
    }
    return Check.fail("indexes", "invalid (a failed CREATE INDEX CONCURRENTLY): " + String.join(", ", invalid),
        "DROP INDEX each of them, then run createSchema() once as the schema's owner (or build them again"
            + " CONCURRENTLY)");
  }

  record Autovacuum(boolean serverOn, Map<String, String> tableOptions, double serverScaleFactor,
      Instant lastAutovacuum) {}

  Check autovacuum() {
    return autovacuum(access.inAutoCommit(c -> {
      try (PreparedStatement ps = Sql.of("SELECT current_setting('autovacuum'), c.reloptions,"
          + " current_setting('autovacuum_vacuum_scale_factor'), s.last_autovacuum FROM pg_class c"
          + " LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid WHERE c.oid = CAST(? AS regclass)", access.table)
          .prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
        rs.next();
        Map<String, String> options = new LinkedHashMap<>();
        Array reloptions = rs.getArray(2);
        if (reloptions != null) {
          for (Object option : (Object[]) reloptions.getArray()) {
            String[] kv = option.toString().split("=", 2);
            options.put(kv[0], kv.length > 1 ? kv[1] : "");
          }
        }
        return new Autovacuum("on".equals(rs.getString(1)), options, Double.parseDouble(rs.getString(3)),
            access.dialect.getInstant(rs, 4));
      }
    }), access.table);
  }

  static Check autovacuum(Autovacuum a, String table) {
    String name = "autovacuum";
    String tuned = "ALTER TABLE " + table + " SET (" + RECOMMENDED + ")";
    if (!a.serverOn()) {
      return Check.fail(name, "autovacuum = off for the server: nothing cleans the dead rows of the table",
          "turn it on (ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf()) and " + tuned + ", or schedule"
              + " VACUUM " + table + " every 30 s");
    }
    if ("false".equalsIgnoreCase(a.tableOptions().get("autovacuum_enabled"))) {
      return Check.fail(name, "autovacuum_enabled = false for the table", "ALTER TABLE " + table
          + " RESET (autovacuum_enabled), then " + tuned);
    }
    String own = a.tableOptions().get("autovacuum_vacuum_scale_factor");
    double factor = own != null ? Double.parseDouble(own) : a.serverScaleFactor();
    String figure = "autovacuum_vacuum_scale_factor " + factor + (own != null ? " (table)" : " (server default)")
        + ", last autovacuum " + (a.lastAutovacuum() == null ? "never" : a.lastAutovacuum().toString());
    if (factor > OutboxDoctor.MAX_VACUUM_SCALE_FACTOR) {
      return Check.warn(name, figure + ": dead rows pile up to " + Math.round(factor * 100) + "% of the table before"
          + " a vacuum", tuned);
    }
    return Check.pass(name, figure);
  }

  Check deadTuples() {
    String name = "dead-tuples";
    return access.inAutoCommit(c -> {
      try (PreparedStatement ps = Sql.of("SELECT n_live_tup, n_dead_tup, GREATEST(last_autovacuum, last_vacuum)"
          + " FROM pg_stat_user_tables WHERE relid = CAST(? AS regclass)", access.table).prepare(c, access.dialect);
          ResultSet rs = ps.executeQuery()) {
        if (!rs.next()) {
          return Check.pass(name, "no statistics yet");
        }
        long live = rs.getLong(1);
        long dead = rs.getLong(2);
        Instant vacuumed = access.dialect.getInstant(rs, 3);
        double ratio = live + dead == 0 ? 0 : (double) dead / (live + dead);
        String figure = dead + " dead tuple(s), " + String.format(Locale.ROOT, "%.0f%%", ratio * 100) + " of "
            + (live + dead) + " row versions; last vacuum " + (vacuumed == null ? "never" : vacuumed.toString());
        if (dead >= OutboxDoctor.DEAD_TUPLES_WARNING && ratio > OutboxDoctor.DEAD_TUPLE_RATIO_WARNING) {
          return Check.warn(name, figure, "VACUUM (VERBOSE) " + access.table + "; when it removes little, a"
              + " transaction holds the xmin horizon (see oldest-transaction); then tune autovacuum");
        }
        return Check.pass(name, figure);
      }
    });
  }

  /** The oldest session or prepared transaction holding the xmin horizon of this database. */
  Check oldestTransaction(Duration max) {
    String name = "oldest-transaction";
    return access.inAutoCommit(c -> {
      String holder = null;
      long micros = -1;
      String remedy = null;
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT pid, state, application_name,"
          + " CAST(EXTRACT(EPOCH FROM (clock_timestamp() - xact_start)) * 1000000 AS bigint) FROM pg_stat_activity"
          + " WHERE (datname = current_database() OR datname IS NULL) AND (backend_xmin IS NOT NULL OR backend_xid IS"
          + " NOT NULL) AND pid <> pg_backend_pid() AND xact_start IS NOT NULL ORDER BY xact_start LIMIT 1")) {
        if (rs.next()) {
          micros = rs.getLong(4);
          holder = "session pid " + rs.getInt(1) + ", " + rs.getString(2) + ", application '" + rs.getString(3) + "'";
          remedy = "end it: SELECT pg_terminate_backend(" + rs.getInt(1) + ") if it is forgotten; set"
              + " idle_in_transaction_session_timeout for application roles";
        }
      }
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT gid, CAST(EXTRACT(EPOCH FROM"
          + " (clock_timestamp() - prepared)) * 1000000 AS bigint) FROM pg_prepared_xacts WHERE database ="
          + " current_database() ORDER BY prepared LIMIT 1")) {
        if (rs.next() && rs.getLong(2) > micros) {
          micros = rs.getLong(2);
          holder = "prepared transaction '" + rs.getString(1) + "'";
          remedy = "COMMIT PREPARED or ROLLBACK PREPARED '" + rs.getString(1) + "'";
        }
      }
      boolean seesAll;
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
          "SELECT pg_has_role(current_user, 'pg_read_all_stats', 'MEMBER')")) {
        seesAll = rs.next() && rs.getBoolean(1);
      }
      String blind = seesAll ? "" : "; this role sees only its own sessions";
      if (holder == null) {
        return seesAll ? Check.pass(name, "no transaction holds the xmin horizon")
            : Check.warn(name, "none seen" + blind, "grant the role pg_read_all_stats");
      }
      Duration age = Duration.of(Math.max(0, micros), ChronoUnit.MICROS);
      String figure = "a transaction open for " + TableChecks.age(age) + " holds the xmin horizon (" + holder + ")"
          + blind;
      if (age.compareTo(max) > 0) {
        return Check.warn(name, figure + ", over " + TableChecks.age(max) + ": vacuum removes no row deleted or"
            + " updated since it began", remedy);
      }
      return seesAll ? Check.pass(name, figure) : Check.warn(name, figure, "grant the role pg_read_all_stats");
    });
  }
}
