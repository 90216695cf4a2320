package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The ambiguous commit: an application's connection breaks right after its {@code COMMIT} reached the
 * server (a proxy forwards the {@code COMMIT}, then resets the client's side). The application must see an
 * error although the transaction committed, and the committed event must be dispatched exactly like any
 * other: once, in its aggregate's order, never inserted twice. The application finds the outcome the way
 * PostgreSQL offers: it noted {@code txid_current()} before committing and asks {@code txid_status} once the
 * transaction is no longer in progress.
 */
class AmbiguousCommitTest {

  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void connectionCutAfterCommitWasForwarded() throws Exception {
    int cuts = 10;
    try (Scenario s = Scenario.of("database proxy: cut after COMMIT forwarded x" + cuts, "ordered", "recording", 703);
        TcpProxy proxy = new TcpProxy(Servers.postgres().port())) {
      s.repetitions = cuts;
      s.produce();
      s.worker("w1");
      s.worker("w2");
      Set<UUID> cutIds = new HashSet<>();
      int committed = 0;
      for (int i = 0; i < cuts; i++) {
        String aggregate = "cut-" + i;
        List<OutboxEvent> events = List.of(Workload.event(aggregate, 1, false), Workload.event(aggregate, 2, false));
        SQLException failure;
        long xid;
        try (Connection c = DriverManager.getConnection(s.postgres.appUrl(proxy.port(), "faults-app"))) {
          c.setAutoCommit(false);
          s.store.append(c, events);
          xid = transactionId(c);
          proxy.cutAfterCommit();
          failure = catchThrowableOfType(c::commit, SQLException.class);
        }
        assertThat(proxy.commitCut()).as("the proxy cut the connection after COMMIT").isTrue();
        assertThat((Throwable) failure).as("the application sees its commit fail").isNotNull();
        assertThat(failure.getSQLState()).as("a connection failure (class 08): the outcome is unknown")
            .startsWith("08");
        // what the application must do now: wait until the server settled the transaction (the commit may
        // still be running in the old session: a lookup right away can miss it), then look the events up
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> !"in progress".equals(status(s, xid)));
        String status = status(s, xid);
        boolean exists = s.store.find(events.get(0).id()).isPresent();
        assertThat(exists).as("the events exist exactly when the transaction committed (%s)", status)
            .isEqualTo("committed".equals(status));
        assertThat(s.store.find(events.get(1).id()).isPresent()).as("all or nothing").isEqualTo(exists);
        if (exists) {
          committed++;
          for (OutboxEvent e : events) {
            s.extraCommitted.add(new Produced(e.id(), aggregate, Workload.sequenceOf(e.payload()), false));
            cutIds.add(e.id());
          }
        }
        s.awaitProduced(15);
      }
      System.out.printf("ambiguous commits: %d cut after COMMIT, %d of them committed%n", cuts, committed);
      s.finish(); // the committed ones delivered once, in order; nothing lost
      for (UUID id : cutIds) {
        assertThat(s.store.find(id).orElseThrow().status()).isEqualTo(OutboxStatus.DISPATCHED);
      }
      assertThat(committed).as("the server got every COMMIT before the cut").isEqualTo(cuts);
      Set<UUID> known = new HashSet<>();
      s.extraCommitted.forEach(p -> known.add(p.id()));
      s.producer.committed().forEach(p -> known.add(p.id()));
      assertThat(s.readDeliveries()).as("nothing delivered that was not committed")
          .allSatisfy(d -> assertThat(known).contains(d.eventId()));
    }
  }

  private static long transactionId(Connection c) throws SQLException {
    try (Statement st = c.createStatement(); ResultSet rs = st.executeQuery("SELECT txid_current()")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  /** {@code committed}, {@code aborted} or {@code in progress}, from another session. */
  private static String status(Scenario s, long xid) throws SQLException {
    try (Connection c = s.dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT txid_status(?)")) {
      ps.setLong(1, xid);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getString(1);
      }
    }
  }
}
