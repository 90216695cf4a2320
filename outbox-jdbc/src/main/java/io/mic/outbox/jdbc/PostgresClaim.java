package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;

/**
 * The PostgreSQL claim: one statement, {@code FOR UPDATE OF o SKIP LOCKED} in a materialized CTE, then
 * {@code UPDATE … RETURNING}, right after reading the control table's pauses on the same connection
 * ({@link ControlStatements#merge}). A claim held by a transaction ({@link HeldClaims}) leaves the rows as
 * they are: its row locks are the lease, taken by one {@code SELECT … FOR UPDATE OF o SKIP LOCKED} that
 * returns the rows it locked.
 */
final class PostgresClaim extends ClaimStatement {
  /**
   * The lease on the picked rows, found by primary key: {@code id = ANY(ARRAY(…))} and not a join with
   * {@code picked}, for which the planner, expecting 500 rows against a table of some tens of thousands,
   * hashed a sequential scan of the whole table, dead row versions included, on every claim.
   */
  private static final String LEASE = " UPDATE %s t SET status = 'PROCESSING', attempts = t.attempts + 1,"
      + " lease_owner = ?, lease_until = now() + ? * interval '1 microsecond'"
      + " WHERE t.id = ANY(ARRAY(SELECT id FROM picked))";

  PostgresClaim(TableAccess access, DispatchSql sql) {
    super(access, sql);
  }

  @Override
  List<OutboxEvent> claim(ReadRequest request) {
    return access.inAutoCommit(c -> claim(c, request, false));
  }

  /**
   * Claims on {@code c}: leases the rows, or, when {@code hold}, only locks them in {@code c}'s transaction,
   * which must then stay open until the batch is settled.
   */
  List<OutboxEvent> claim(Connection c, ReadRequest request, boolean hold) throws SQLException {
    ReadRequest r = ControlStatements.merge(c, request, sql.tables.control(), sql.dialect);
    if (r == null) {
      return List.of();
    }
    Sql claim = r.runs() ? claimRuns(r, hold) : claimEvents(r, hold);
    try (PreparedStatement ps = claim.prepare(c, sql.dialect)) {
      return EventRows.readDue(c, ps, sql.dialect, sql.tables.outbox());
    }
  }

  /**
   * The columns of a row of {@code alias} as a lease would return it ({@code PROCESSING}, the attempt
   * counted, the owner and the lease's end), with the row itself unchanged: the transaction holding its lock
   * is the lease.
   */
  private static Sql held(String alias, ReadRequest r) {
    return Sql.of(Sql.aliased(alias)
        .replace(alias + "status, " + alias + "attempts,", "'PROCESSING', " + alias + "attempts + 1,")
        .replace(alias + "lease_owner, " + alias + "lease_until,", "?, now() + ? * interval '1 microsecond',"),
        r.owner(), r.leaseMicros());
  }

  /**
   * What is done with the picked rows: held, they are read as {@link #held} returns them, found by primary
   * key; else leased ({@link #LEASE}).
   */
  private Sql take(ReadRequest r, boolean hold) {
    String table = sql.tables.outbox();
    return hold
        ? Sql.of(" SELECT ").plus(held("t.", r)).plus(" FROM " + table + " t WHERE t.id = ANY(ARRAY(SELECT id FROM picked))")
        : Sql.of(LEASE.formatted(table), r.owner(), r.leaseMicros());
  }

  /**
   * Held, one {@code SELECT} locks and returns the rows; reading them again by primary key, as the lease's
   * {@code UPDATE} must, made the claim of 500 take 2.4 ms instead of 2.1.
   */
  private Sql claimEvents(ReadRequest r, boolean hold) {
    Sql pick = Sql.of(" FROM " + sql.tables.outbox() + " o WHERE " + sql.claimable()).plus(sql.notPaused("o", r))
        .plus(sql.notInFlight(r)).plus(sql.after(r))
        .plus((r.ordered() ? sql.isHead(r) : "") + " ORDER BY " + sql.dispatchOrder() + " LIMIT ?", r.limit())
        .plus(" FOR UPDATE OF o SKIP LOCKED");
    return hold ? Sql.of("SELECT ").plus(held("o.", r)).plus(pick)
        : Sql.of("WITH picked AS MATERIALIZED (SELECT o.id").plus(pick).plus(")").plus(take(r, false))
            .plus(" RETURNING " + Sql.aliased("t."));
  }

  /**
   * Heads are locked with SKIP LOCKED; the events behind them are read unlocked (nobody else can claim them
   * while their head is live) and locked by the UPDATE, which checks them again. A run stops at the first
   * event that is not a due {@code PENDING} one of a topic not paused. Held, the followers are locked by the
   * final {@code SELECT}, which checks them again the same way.
   */
  private Sql claimRuns(ReadRequest r, boolean hold) {
    String table = sql.tables.outbox();
    Sql notPaused = sql.notPaused("m", r);
    return Sql.of("WITH heads AS MATERIALIZED (SELECT o.id, o.aggregate_type, o.aggregate_id, o.created_at,"
        + " o.priority FROM " + table + " o WHERE " + sql.claimable()).plus(sql.notPaused("o", r))
        .plus(sql.notInFlight(r))
        .plus(sql.isHead(r) + " ORDER BY " + sql.dispatchOrder() + " LIMIT ? FOR UPDATE OF o SKIP LOCKED),", r.limit())
        .plus(" ranked AS (SELECT h.*, row_number() OVER (ORDER BY h.priority DESC, h.created_at, h.id) AS head_rank"
            + " FROM heads h),"
            + " followers AS (SELECT r.head_rank, f.id, f.pos FROM ranked r CROSS JOIN LATERAL ("
            + "SELECT n.id, row_number() OVER w AS pos,"
            + " bool_and(n.status = 'PENDING' AND n.next_attempt_at <= now() AND n.open) OVER w AS contiguous"
            + " FROM (SELECT m.id, m.status, m.next_attempt_at, m.created_at,"
            + " CASE WHEN TRUE")
        .plus(notPaused)
        .plus(" THEN TRUE ELSE FALSE END AS open FROM " + table + " m"
            + " WHERE m.aggregate_type = r.aggregate_type AND m.aggregate_id = r.aggregate_id"
            + " AND m.status IN ('PENDING', 'PROCESSING')"
            + " AND (m.created_at, m.id) > (r.created_at, r.id) ORDER BY m.created_at, m.id LIMIT ?) n"
            + " WINDOW w AS (ORDER BY n.created_at, n.id)) f WHERE f.contiguous),", r.runLength() - 1)
        // heads first, then followers breadth first; the LIMIT stops the append before the followers are
        // computed at all when the heads fill the batch (they did all the work for nothing before)
        .plus(" picked AS MATERIALIZED (SELECT id FROM ((SELECT id FROM ranked ORDER BY head_rank)"
            + " UNION ALL (SELECT id FROM followers ORDER BY pos, head_rank)) x LIMIT ?)", r.limit())
        .plus(take(r, hold))
        .plus(" AND " + sql.claimable("t") + (hold ? " FOR UPDATE OF t" : " RETURNING " + Sql.aliased("t.")));
  }
}
