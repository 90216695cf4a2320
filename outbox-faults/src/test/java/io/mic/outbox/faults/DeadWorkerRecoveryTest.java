package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two dispatcher processes with the dispatcher's default lease and poll interval, claims and per-aggregate
 * order: one is SIGKILLed while it holds claimed heads. The other must publish the dead one's events within
 * 5 s of the kill; until then those aggregates are stuck.
 */
class DeadWorkerRecoveryTest {
  /** The longest a dead process's claims may hold up their aggregates with the default settings. */
  static final Duration RECOVERY_BOUND = Duration.ofSeconds(5);

  @Tag("fast")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void deadWorkersHeadsMoveOnWithinSeconds() throws Exception {
    int rounds = Servers.full() ? 3 : 1;
    try (Scenario s = Scenario.of("SIGKILL holding heads, default lease", "ordered", "recording", 121)) {
      s.leaseMs = 0;
      s.pollMs = 0;
      s.repetitions = rounds;
      s.produce();
      s.worker("survivor");
      long slowest = 0;
      for (int r = 0; r < rounds; r++) {
        WorkerProcess victim = s.worker("victim-" + r, "fault=after-claim", "faultAt=3");
        victim.awaitLine("AT after-claim", Duration.ofSeconds(60));
        Set<UUID> held = heldBy(s, victim);
        assertThat(held).as("the victim holds claimed heads").isNotEmpty();
        victim.kill();
        long killed = System.nanoTime();
        double leaseLeft = leaseLeftSeconds(s, held);
        Awaitility.await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(20))
            .until(() -> Delivery.readLog(s.deliveries).stream()
                .anyMatch(d -> d.pid() != victim.pid() && held.contains(d.eventId())));
        long stuckMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
        slowest = Math.max(slowest, stuckMillis);
        System.out.printf("SIGKILL holding %d heads (lease %s, %.2f s of it left): first of them published %.2f s"
            + " after the kill%n", held.size(), s.lease(), leaseLeft, stuckMillis / 1000.0);
        s.duplicateBound += CrashPointTest.bound(s, FaultPoint.AFTER_CLAIM);
        s.awaitProduced(30);
      }
      s.finish();
      assertThat(Duration.ofMillis(slowest)).as("seconds stuck after a SIGKILL, default settings")
          .isLessThanOrEqualTo(RECOVERY_BOUND);
    }
  }

  /** How long the longest of the leases on {@code ids} has left to run, by the database's clock. */
  static double leaseLeftSeconds(Scenario s, Set<UUID> ids) throws Exception {
    try (Connection c = s.dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT extract(epoch FROM max(lease_until) - clock_timestamp())"
            + " FROM " + s.table + " WHERE id = ANY(?)")) {
      ps.setArray(1, c.createArrayOf("uuid", ids.toArray()));
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getDouble(1);
      }
    }
  }

  /** The events {@code worker} holds under its claims now. */
  static Set<UUID> heldBy(Scenario s, WorkerProcess worker) throws Exception {
    Set<UUID> ids = new HashSet<>();
    try (Connection c = s.dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT id FROM " + s.table
            + " WHERE status = 'PROCESSING' AND lease_owner LIKE ?")) {
      ps.setString(1, "faults-" + worker.pid() + "-%");
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(rs.getObject(1, UUID.class));
        }
      }
    }
    return ids;
  }
}
