package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The portable claim (MariaDB, MySQL, H2), in one transaction: lock and read claimable rows with
 * {@code SKIP LOCKED}, then lease exactly those. Its first statement reads the control table's pauses
 * ({@link ControlStatements#merge}), without locking: InnoDB and H2 lock every row a locking read reads, and
 * a concurrent claim would then skip the pause rows as locked, not paused.
 */
final class LockingClaim extends ClaimStatement {
  private final Dialect dialect;
  private final String table;

  LockingClaim(TableAccess access, DispatchSql sql) {
    super(access, sql);
    this.dialect = sql.dialect;
    this.table = sql.tables.outbox();
  }

  @Override
  List<OutboxEvent> claim(ReadRequest request) {
    return access.inTransaction(c -> {
      ReadRequest r = ControlStatements.merge(c, request, sql.tables.control(), dialect);
      if (r == null) {
        return List.of();
      }
      return r.runs() ? lockAndLeaseRuns(c, r) : lockAndLease(c, r);
    });
  }

  private List<OutboxEvent> lockAndLease(Connection c, ReadRequest r) throws SQLException {
    List<OutboxEvent> locked = new ArrayList<>();
    Instant dbNow = null;
    List<UUID> candidates = r.ordered() ? headCandidates(c, r) : null;
    if (candidates != null && candidates.isEmpty()) {
      return locked;
    }
    // A head stays the head once read: new events sort after it, and only an operator's redrive can
    // bring an older event back to life.
    try (PreparedStatement ps = (r.ordered() ? lockClaimableIds(candidates) : lockClaimable(r)).prepare(c, dialect)) {
      List<EventRows.Unreadable> unreadable = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          OutboxEvent event = EventRows.readOrSetAside(rs, dialect, unreadable);
          if (event != null) {
            locked.add(event);
          }
          dbNow = dialect.getInstant(rs, 20);
        }
      }
      EventRows.deadLetter(c, table, dialect, unreadable); // locked by this transaction
    }
    if (locked.isEmpty()) {
      return locked;
    }
    List<UUID> ids = locked.stream().map(OutboxEvent::id).toList();
    int leased = lease(c, r, ids);
    if (leased != ids.size()) {
      throw new OutboxStoreException("leased " + leased + " of " + ids.size() + " locked events in "
          + access.name + "; the claim was rolled back", null);
    }
    Instant leaseUntil = dbNow.plus(r.leaseTtl());
    List<OutboxEvent> claimed = new ArrayList<>(locked.size());
    for (OutboxEvent e : locked) {
      claimed.add(e.toStored().status(OutboxStatus.PROCESSING).attempts(e.attempts() + 1)
          .lease(r.owner(), leaseUntil).build());
    }
    return claimed;
  }

  /**
   * Runs: lock the heads, then, if the batch has room, read the due events behind each (nobody else can
   * claim them while their head is locked) and lease heads and followers together, breadth first.
   */
  private List<OutboxEvent> lockAndLeaseRuns(Connection c, ReadRequest r) throws SQLException {
    List<UUID> candidates = headCandidates(c, r);
    List<UUID> heads = candidates.isEmpty() ? candidates : ids(c, lockClaimableIds(candidates));
    List<List<UUID>> runs = new ArrayList<>();
    for (UUID head : heads) {
      runs.add(new ArrayList<>(List.of(head)));
    }
    if (!heads.isEmpty() && heads.size() < r.limit()) {
      try (PreparedStatement ps = c.prepareStatement(followers(r, heads.get(0)).text())) {
        for (List<UUID> run : runs) {
          followers(r, run.get(0)).bind(ps, dialect); // one text for every head
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next() && rs.getInt(2) == 1) {
              run.add(dialect.getId(rs, 1));
            }
          }
        }
      }
    }
    List<UUID> picked = new ArrayList<>();
    for (int position = 0; picked.size() < r.limit(); position++) {
      int before = picked.size();
      for (List<UUID> run : runs) {
        if (position < run.size() && picked.size() < r.limit()) {
          picked.add(run.get(position));
        }
      }
      if (picked.size() == before) {
        break;
      }
    }
    if (picked.isEmpty()) {
      return new ArrayList<>();
    }
    lease(c, r, picked);
    Sql read = Sql.of("SELECT " + Sql.COLUMNS + " FROM " + table + " WHERE ").plus(Sql.in("id", picked))
        .plus(" AND lease_owner = ?", r.owner());
    try (PreparedStatement ps = read.prepare(c, dialect)) {
      return EventRows.readDue(c, ps, dialect, table);
    }
  }

  /** Locks claimable events, skipping held ones, with the database clock as a twentieth column. */
  private Sql lockClaimable(ReadRequest r) {
    return Sql.of("SELECT " + Sql.aliased("o.") + ", " + dialect.now() + " FROM " + table + " o WHERE "
        + sql.liveRows() + sql.claimable()).plus(sql.notPaused("o", r)).plus(sql.after(r))
        .plus(" ORDER BY " + sql.dispatchOrder() + " LIMIT ? FOR UPDATE SKIP LOCKED", r.limit());
  }

  /**
   * Reads, without locking, the claimable heads of aggregates: a locking read would also lock every row the
   * head probe reads (InnoDB has no {@code FOR UPDATE OF}), so heads are locked afterwards, by id.
   */
  private List<UUID> headCandidates(Connection c, ReadRequest r) throws SQLException {
    return ids(c, Sql.of("SELECT o.id FROM " + table + " o WHERE " + sql.liveRows() + sql.claimable())
        .plus(sql.notPaused("o", r)).plus(sql.isHead(r) + " ORDER BY " + sql.dispatchOrder() + " LIMIT ?", r.limit()));
  }

  /** Locks and reads, as {@link #lockClaimable}, those of {@code ids} still claimable. */
  private Sql lockClaimableIds(List<UUID> ids) {
    return Sql.of("SELECT " + Sql.aliased("o.") + ", " + dialect.now() + " FROM " + table + " o WHERE ")
        .plus(Sql.in("o.id", ids)).plus(" AND " + sql.claimable() + " FOR UPDATE SKIP LOCKED");
  }

  /**
   * The live events behind a head, in order, with a flag telling whether each is a due {@code PENDING} event
   * of a topic not paused (a run stops at the first that is not).
   */
  private Sql followers(ReadRequest r, UUID head) {
    return Sql.of("SELECT m.id, CASE WHEN m.status = 'PENDING' AND m.next_attempt_at <= " + dialect.now())
        .plus(sql.notPaused("m", r))
        .plus(" THEN 1 ELSE 0 END FROM " + table + " m JOIN " + table + " h ON h.id = ?", head)
        .plus(" WHERE m.aggregate_type = h.aggregate_type AND m.aggregate_id = h.aggregate_id"
            + " AND m.status IN ('PENDING', 'PROCESSING') AND (m.created_at, m.id) > (h.created_at, h.id)"
            + " ORDER BY m.created_at, m.id LIMIT ?", r.runLength() - 1);
  }

  /** Leases the chosen events, checking each is still claimable; returns how many it leased. */
  private int lease(Connection c, ReadRequest r, List<UUID> ids) throws SQLException {
    Sql lease = Sql.of("UPDATE " + table + " o SET status = 'PROCESSING', attempts = attempts + 1, lease_owner = ?,"
        + " lease_until = ", r.owner()).plus(Sql.later(dialect, r.leaseMicros())).plus(" WHERE ")
        .plus(Sql.in("id", ids)).plus(" AND " + sql.claimable());
    try (PreparedStatement ps = lease.prepare(c, dialect)) {
      return ps.executeUpdate();
    }
  }

  private List<UUID> ids(Connection c, Sql read) throws SQLException {
    List<UUID> ids = new ArrayList<>();
    try (PreparedStatement ps = read.prepare(c, dialect); ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        ids.add(dialect.getId(rs, 1));
      }
    }
    return ids;
  }
}
