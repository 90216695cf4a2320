package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.ClaimedBatch;
import io.mic.outbox.OutboxEvent;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The dispatch statements on PostgreSQL reach the outbox through its indexes only: on a table of 20,000 events,
 * claims, reads and marks of 500 (the default batch) start no sequential scan of the table. Once the lease
 * joined the picked rows, and the planner hashed the whole table for it on every claim. Reads and marks bind
 * their ids in one parameter, whose size the planner cannot see in a generic plan (which PostgreSQL may keep
 * for a statement the driver has prepared on the server); they are checked in generic plans too. Counted by
 * PostgreSQL itself ({@code pg_stat_user_tables.seq_scan}), on the single connection of the pool so that its
 * statistics can be flushed before they are read.
 */
class PostgresPlanTest {
  private HikariDataSource dataSource;
  private String table;

  @AfterEach
  void dropTable() {
    TestDatabase.dropOutbox(dataSource, table);
    dataSource.close();
  }

  @Test
  void aClaimStartsNoSequentialScanOfTheTable() throws SQLException {
    JdbcOutboxStore store = storeOf20000Events(null);
    long before = sequentialScans();

    assertThat(store.claim(new ClaimRequest("w1", 500, Duration.ofMinutes(1), false, 1, Set.of()))).hasSize(500);
    assertThat(store.claim(new ClaimRequest("w2", 500, Duration.ofMinutes(1), true, 100, Set.of()))).hasSize(500);

    assertThat(sequentialScans()).as("sequential scans of %s by two claims", table).isEqualTo(before);
  }

  @Test
  void inGenericPlansReadsAndMarksStartNoSequentialScanOfTheTable() throws SQLException {
    JdbcOutboxStore store = storeOf20000Events("SET plan_cache_mode = force_generic_plan");
    long before = sequentialScans();

    List<OutboxEvent> inFlight = store.fetchPending(1_000, false);
    List<OutboxEvent> read = store.fetchPending(500, false, Set.of(), ids(inFlight));
    assertThat(ids(read)).as("a read beside 1,000 in flight").hasSize(500).doesNotContainAnyElementsOf(ids(inFlight));
    assertThat(store.fetchPending(500, true, Set.of(), ids(inFlight))).as("the same in ordered mode").hasSize(500);
    assertThat(store.markDispatched(read)).as("the mark of the read").isEqualTo(ids(read));
    List<OutboxEvent> claimed = store.claim(new ClaimRequest("w1", 500, Duration.ofMinutes(1), false, 1, Set.of()));
    assertThat(store.renewLeases(claimed, Duration.ofMinutes(2))).as("renewed").isEqualTo(ids(claimed));
    assertThat(store.release(claimed.subList(0, 250), Duration.ZERO)).as("released")
        .isEqualTo(ids(claimed.subList(0, 250)));
    assertThat(store.markDispatched(claimed.subList(250, 500))).as("the mark of a claim")
        .isEqualTo(ids(claimed.subList(250, 500)));

    assertThat(sequentialScans()).as("sequential scans of %s in generic plans", table).isEqualTo(before);
  }

  /**
   * A claim going on after the last one starts its scan of the claim index at its place: with 1,500 events
   * leased ahead of it, it reads about as many index entries as it claims, where a claim from the start steps
   * over every leased event (and the entries their leases left behind) first.
   */
  @Test
  void aClaimGoingOnAfterTheLastOneStepsOverNoLeasedEvent() throws SQLException {
    JdbcOutboxStore store = storeOf20000Events(null);
    Duration ttl = Duration.ofMinutes(1);
    OutboxEvent last = null;
    for (int i = 0; i < 3; i++) {
      List<OutboxEvent> claimed = store.claim(ClaimRequest.of("w" + i, 500, ttl));
      assertThat(claimed).hasSize(500);
      last = claimed.get(499);
    }
    long before = claimIndexEntriesRead();
    List<OutboxEvent> goingOn = store.claim(ClaimRequest.of("w3", 500, ttl).after(last));
    long goingOnRead = claimIndexEntriesRead() - before;
    List<OutboxEvent> fromTheStart = store.claim(ClaimRequest.of("w4", 500, ttl));
    long fromTheStartRead = claimIndexEntriesRead() - before - goingOnRead;

    assertThat(goingOn).hasSize(500);
    assertThat(goingOn.get(0).createdAt()).as("the first event claimed going on").isAfterOrEqualTo(last.createdAt());
    assertThat(ids(fromTheStart)).as("two claims, no event twice").doesNotContainAnyElementsOf(ids(goingOn));
    assertThat(goingOnRead).as("claim index entries read by the claim going on").isBetween(500L, 520L);
    assertThat(fromTheStartRead).as("claim index entries read by the claim from the start").isGreaterThan(2_000L);
  }

  /**
   * An ordered claim starts at the first head. One held by a transaction leaves out the events its store's
   * batches in flight hold, instead of probing each of their locked rows for an older event of its aggregate
   * and then skipping it: with 1,500 events held ahead it probes about as many heads as it claims, heads
   * alone or with runs behind them.
   */
  @ParameterizedTest(name = "runs of {0}")
  @ValueSource(ints = {1, 100})
  void anOrderedClaimHeldByATransactionProbesNoHeadItsStoreHolds(int maxRun) throws SQLException {
    JdbcOutboxStore store = storeOf20000Events(8, null, true);
    Duration ttl = Duration.ofMinutes(1);
    List<ClaimedBatch> held = new ArrayList<>();
    try {
      for (int i = 0; i < 3; i++) {
        ClaimedBatch claimed = store.claimBatch(new ClaimRequest("w" + i, 500, ttl, true, maxRun, Set.of()));
        held.add(claimed);
        assertThat(claimed.events()).hasSize(500);
      }
      long before = headIndexScans();
      ClaimedBatch next = store.claimBatch(new ClaimRequest("w3", 500, ttl, true, maxRun, Set.of()));
      // its transaction ends: its statistics go out
      assertThat(next.release(next.events(), Duration.ZERO)).hasSize(500);
      long probes = headIndexScans() - before;

      assertThat(ids(next.events())).as("the next 500 heads").hasSize(500)
          .doesNotContainAnyElementsOf(held.stream().flatMap(b -> ids(b.events()).stream()).toList());
      assertThat(probes).as("heads probed by a claim of 500 with 1,500 held ahead").isBetween(500L, 520L);
    } finally {
      held.forEach(ClaimedBatch::close); // the table can be dropped
    }
  }

  /**
   * A claim that holds aggregates asks the held index about the aggregates of the heads it considers only: with
   * 2,000 dead events of other aggregates it reads none of them, so its cost does not grow with the DLQ. (It
   * hashed every dead event's aggregate on every claim, which made 10,000 held aggregates double a claim.)
   */
  @Test
  void aHoldingClaimReadsNoDeadEventOfAnAggregateItDoesNotConsider() throws SQLException {
    JdbcOutboxStore store = storeOf20000Events(null);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("UPDATE " + table + " SET status = 'DLQ' WHERE id IN (SELECT id FROM " + table
          + " ORDER BY created_at DESC, id DESC LIMIT 2000)");
      s.execute("ANALYZE " + table);
    }
    ClaimRequest holding = ClaimRequest.of("w1", 500, Duration.ofMinutes(1)).inRuns(100).holdingOnDeadLetter();
    assertThat(store.claim(holding)).as("the first claim, after a round of parking").hasSize(500);
    long before = deadEntriesRead();

    assertThat(store.claim(holding)).hasSize(500);

    assertThat(deadEntriesRead() - before).as("dead events read by a holding claim beside 2,000 of them").isZero();
  }

  /** The entries read so far from the indexes of dead events (the DLQ's and the held aggregates'). */
  private long deadEntriesRead() throws SQLException {
    return indexStatistic("idx_tup_read", "held_idx") + indexStatistic("idx_tup_read", "dlq_idx");
  }

  /** A store on a new table of 20,000 events of as many aggregates, its statistics fresh. */
  private JdbcOutboxStore storeOf20000Events(String connectionInitSql) throws SQLException {
    return storeOf20000Events(1, connectionInitSql, false);
  }

  private JdbcOutboxStore storeOf20000Events(int connections, String connectionInitSql, boolean transactionalClaims)
      throws SQLException {
    dataSource = TestDatabase.POSTGRES.dataSource(connections, connectionInitSql);
    table = TestDatabase.uniqueName("outbox_plan");
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table)
        .transactionalClaims(transactionalClaims).build();
    store.createSchema();
    TestDatabase.appendOrders(dataSource, store, 20_000);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("ANALYZE " + table);
    }
    return store;
  }

  private static Set<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).collect(Collectors.toSet());
  }

  /** The entries read from the table's claim index so far. */
  private long claimIndexEntriesRead() throws SQLException {
    return indexStatistic("idx_tup_read", "claim_idx");
  }

  /** The scans of the table's head index so far: one per probe of an event for an older one of its aggregate. */
  private long headIndexScans() throws SQLException {
    return indexStatistic("idx_scan", "head_idx");
  }

  /**
   * A column of {@code pg_stat_user_indexes} for the table's index {@code <table>_<suffix>}, the counts of the
   * pool's idle connections flushed first (a connection holding a claim's transaction flushes at its end).
   */
  private long indexStatistic(String column, String suffix) throws SQLException {
    int idle = Math.max(1, dataSource.getHikariPoolMXBean().getIdleConnections());
    List<Connection> connections = new ArrayList<>();
    try {
      for (int i = 0; i < idle; i++) {
        Connection c = dataSource.getConnection();
        connections.add(c);
        try (Statement s = c.createStatement()) {
          s.execute("SELECT pg_stat_force_next_flush()");
          s.execute("SELECT pg_stat_clear_snapshot()"); // the flush happens when this transaction ends
        }
      }
      try (PreparedStatement ps = connections.get(0).prepareStatement("SELECT " + column
          + " FROM pg_stat_user_indexes WHERE relname = ? AND indexrelname = ?")) {
        ps.setString(1, table);
        ps.setString(2, table + "_" + suffix);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).as("statistics of %s_%s", table, suffix).isTrue();
          return rs.getLong(1);
        }
      }
    } finally {
      for (Connection c : connections) {
        c.close();
      }
    }
  }

  /** The table's sequential scans so far, this connection's own counts flushed first. */
  private long sequentialScans() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_force_next_flush()");
      s.execute("SELECT pg_stat_clear_snapshot()"); // the flush happens when this statement's transaction ends
      try (PreparedStatement ps = c.prepareStatement("SELECT seq_scan FROM pg_stat_user_tables WHERE relname = ?")) {
        ps.setString(1, table);
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).as("statistics of %s", table).isTrue();
          return rs.getLong(1);
        }
      }
    }
  }
}
