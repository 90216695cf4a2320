package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.OutboxEvent;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The dispatch statements on a partitioned table with ten partitions of dispatched history (2,000 events each)
 * and one of 2,000 pending events reach it through its indexes only, in generic plans: no sequential scan of a
 * partition that holds rows, and a claim of 500 reads about 500 entries of the claim indexes, since dispatched
 * rows are in no partition's claim index. Statements by id cannot be pruned to one partition (the id does not
 * name its partition): each probes every partition's primary key, an index descent each.
 */
class PostgresPartitionPlanTest {
  private static final int HISTORY = 10;
  private static final int PER_HOUR = 2_000;
  private HikariDataSource dataSource;
  private String table;

  @AfterEach
  void dropTable() {
    TestDatabase.dropOutbox(dataSource, table);
    dataSource.close();
  }

  @Test
  void inGenericPlansDispatchStatementsStartNoSequentialScanOfAPartitionWithRows() throws SQLException {
    JdbcOutboxStore store = storeWithHistory();
    long before = sequentialScans();
    long indexBefore = claimIndexEntriesRead();

    List<OutboxEvent> claimed = store.claim(new ClaimRequest("w1", 500, Duration.ofMinutes(1), false, 1, Set.of()));
    long claimRead = claimIndexEntriesRead() - indexBefore;
    List<OutboxEvent> ordered = store.claim(new ClaimRequest("w2", 500, Duration.ofMinutes(1), true, 100, Set.of()));
    List<OutboxEvent> read = store.fetchPending(500, false, Set.of(), ids(claimed));
    assertThat(store.renewLeases(claimed, Duration.ofMinutes(2))).isEqualTo(ids(claimed));
    assertThat(store.release(ordered, Duration.ZERO)).isEqualTo(ids(ordered));
    assertThat(store.markDispatched(claimed)).isEqualTo(ids(claimed));

    assertThat(claimed).hasSize(500);
    assertThat(ordered).hasSize(500).extracting(OutboxEvent::id).doesNotContainAnyElementsOf(ids(claimed));
    assertThat(read).hasSize(500);
    assertThat(claimRead).as("claim index entries read by a claim of 500").isBetween(500L, 520L);
    assertThat(sequentialScans()).as("sequential scans of the partitions of %s holding rows", table)
        .isEqualTo(before);
  }

  /**
   * Hourly partitions for the ten hours before the current one, each with 2,000 dispatched events, and 2,000
   * pending events in the current one; statistics fresh. Each hour's events are appended, then every stored time
   * moves an hour back (rows move to the partition of their new created_at).
   */
  private JdbcOutboxStore storeWithHistory() throws SQLException {
    dataSource = TestDatabase.POSTGRES.dataSource(1, "SET plan_cache_mode = force_generic_plan");
    table = TestDatabase.uniqueName("outbox_pplan");
    Duration hour = Duration.ofHours(1);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).partitionInterval(hour)
        .build();
    store.createSchema();
    Instant current = PostgresPartitionsTest.partitions(store).get(1).lower();
    sql("DROP TABLE " + table + "_past");
    sql("CREATE TABLE " + table + "_past PARTITION OF " + table + " FOR VALUES FROM (MINVALUE) TO ('"
        + current.minus(hour.multipliedBy(HISTORY)) + "')");
    for (int h = HISTORY; h > 0; h--) {
      sql("CREATE TABLE " + table + "_h" + h + " PARTITION OF " + table + " FOR VALUES FROM ('"
          + current.minus(hour.multipliedBy(h)) + "') TO ('" + current.minus(hour.multipliedBy(h - 1)) + "')");
    }
    for (int h = 0; h < HISTORY; h++) {
      List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, PER_HOUR);
      List<OutboxEvent> stored = store.fetchPending(PER_HOUR, false);
      assertThat(store.markDispatched(stored)).hasSize(events.size());
      StoredTimes.shift(dataSource, store, hour);
    }
    TestDatabase.appendOrders(dataSource, store, PER_HOUR);
    sql("VACUUM (ANALYZE) " + table); // the marks and moves left dead index entries, as autovacuum would clear
    return store;
  }

  private static Set<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).collect(Collectors.toSet());
  }

  private long sequentialScans() throws SQLException {
    return statistic("SELECT COALESCE(sum(seq_scan), 0) FROM pg_stat_user_tables WHERE relid IN (SELECT inhrelid"
        + " FROM pg_inherits WHERE inhparent = to_regclass(?)) AND n_live_tup > 0", table);
  }

  private long claimIndexEntriesRead() throws SQLException {
    return statistic("SELECT COALESCE(sum(idx_tup_read), 0) FROM pg_stat_user_indexes WHERE indexrelid IN"
        + " (SELECT inhrelid FROM pg_inherits WHERE inhparent = to_regclass(?))", table + "_claim_idx");
  }

  /** A statistic, the pool's single connection's counts flushed first. */
  private long statistic(String query, String name) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("SELECT pg_stat_force_next_flush()");
      s.execute("SELECT pg_stat_clear_snapshot()"); // the flush happens when this statement's transaction ends
      try (PreparedStatement ps = c.prepareStatement(query)) {
        ps.setString(1, name);
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1);
        }
      }
    }
  }

  private void sql(String statement) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    } catch (SQLException e) {
      throw new IllegalStateException(statement, e);
    }
  }
}
