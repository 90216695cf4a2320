package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Long transactions beside the outbox: an append held open while later ones commit; a snapshot pinning xmin. */
class TransactionFaultTest {

  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void appendHeldOpenWhileLaterOnesCommit() throws Exception {
    try (Scenario s = Scenario.of("producer transaction held open", "ordered", "recording", 801)) {
      s.produce();
      s.worker("w1");
      s.worker("w2");
      List<Produced> held = new ArrayList<>();
      try (Connection c = s.dataSource.getConnection()) {
        c.setAutoCommit(false);
        List<OutboxEvent> events = new ArrayList<>();
        for (int seq = 1; seq <= 5; seq++) {
          OutboxEvent e = Workload.event("held", seq, false);
          events.add(e);
          held.add(new Produced(e.id(), "held", seq, false));
        }
        s.store.append(c, events); // created_at (transaction time) is older than everything committed meanwhile
        s.awaitProduced(200);
        c.commit();
      }
      s.extraCommitted.addAll(held);
      s.awaitProduced(40);
      s.finish();
    }
  }

  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void snapshotHoldingBackXmin() throws Exception {
    try (Scenario s = Scenario.of("long transaction holding xmin", "throughput", "recording", 802)) {
      s.produce();
      s.worker("w1");
      s.worker("w2");
      long deadBefore;
      long deadDuring;
      try (Connection pin = s.postgres.admin()) {
        pin.setAutoCommit(false);
        pin.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
        try (Statement st = pin.createStatement(); ResultSet rs = st.executeQuery("SELECT count(*) FROM " + s.table)) {
          rs.next(); // the snapshot is taken: vacuum keeps every row version newer than it
        }
        deadBefore = deadTuples(s);
        s.awaitProduced(400);
        deadDuring = deadTuples(s);
        pin.commit();
      }
      s.awaitProduced(40);
      s.finish();
      System.out.printf("xmin held: n_dead_tup %d -> %d while pinned%n", deadBefore, deadDuring);
      assertThat(deadDuring).as("dead row versions pile up while xmin is held").isGreaterThanOrEqualTo(deadBefore);
    }
  }

  private static long deadTuples(Scenario s) throws Exception {
    try (Connection c = s.postgres.admin(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT coalesce(sum(n_dead_tup), 0) FROM pg_stat_user_tables WHERE relname = '"
            + s.table + "'")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
