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
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A claim on PostgreSQL reads the outbox through its indexes only: on a table of 20,000 events a claim of 500
 * (the default batch), in throughput and in ordered mode, starts no sequential scan of the table (the lease
 * once joined the picked rows, and the planner hashed the whole table for it on every claim). Counted by
 * PostgreSQL itself ({@code pg_stat_user_tables.seq_scan}), on the single connection of the pool so that its
 * statistics can be flushed before they are read.
 */
class PostgresClaimPlanTest {
  private HikariDataSource dataSource;
  private String table;

  @BeforeEach
  void createTable() throws SQLException {
    dataSource = TestDatabase.POSTGRES.dataSource(1, null);
    table = TestDatabase.uniqueName("outbox_plan");
  }

  @AfterEach
  void dropTable() {
    TestDatabase.dropOutbox(dataSource, table);
    dataSource.close();
  }

  @Test
  void aClaimStartsNoSequentialScanOfTheTable() throws SQLException {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (int batch = 0; batch < 20; batch++) {
        List<OutboxEvent> events = new ArrayList<>();
        for (int i = 0; i < 1_000; i++) {
          events.add(OutboxEvent.builder().aggregate("order", batch + "-" + i).topic("order.created")
              .payload("{\"n\":" + i + "}").build());
        }
        store.append(c, events);
        c.commit();
      }
      c.setAutoCommit(true);
      try (Statement s = c.createStatement()) {
        s.execute("ANALYZE " + table);
      }
    }
    long before = sequentialScans();

    assertThat(store.claim(new ClaimRequest("w1", 500, Duration.ofMinutes(1), false, 1, Set.of()))).hasSize(500);
    assertThat(store.claim(new ClaimRequest("w2", 500, Duration.ofMinutes(1), true, 100, Set.of()))).hasSize(500);

    assertThat(sequentialScans()).as("sequential scans of %s by two claims", table).isEqualTo(before);
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
