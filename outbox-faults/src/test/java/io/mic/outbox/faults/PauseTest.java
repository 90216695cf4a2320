package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * SIGSTOP of a worker in the middle of a batch, longer than its lease, then SIGCONT (a GC pause, a frozen
 * VM): the other worker takes the batch over; the thawed worker's marks change nothing and it stops
 * publishing the events it no longer owns.
 */
class PauseTest {

  @Tag("fast")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void pausedPastItsLease() throws Exception {
    pausePastTheLease("SIGSTOP past the lease, SIGCONT", s -> {});
  }

  /** The same with the dispatcher's default lease and poll interval. */
  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void pausedPastTheDefaultLease() throws Exception {
    pausePastTheLease("SIGSTOP past the default lease, SIGCONT", s -> {
      s.leaseMs = 0;
      s.pollMs = 0;
    });
  }

  private static void pausePastTheLease(String fault, Consumer<Scenario> setUp) throws Exception {
    try (Scenario s = Scenario.of(fault, "ordered", "recording", 201)) {
      setUp.accept(s);
      s.produce();
      WorkerProcess paused = s.worker("paused", "delayMs=25");
      s.worker("survivor");
      String owner = "faults-" + paused.pid() + "-%";
      long held = 0;
      for (int tries = 0; tries < 20 && held == 0; tries++) {
        s.awaitProduced(10);
        paused.pause();
        held = processingOwnedBy(s, owner);
        if (held == 0) {
          paused.resume(); // caught between two batches: try again
        }
      }
      assertThat(held).as("the paused worker holds a claimed batch").isPositive();
      // the lease runs out while the process is frozen; the survivor claims the batch again
      Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> processingOwnedBy(s, owner) == 0);
      int linesAtThaw = Delivery.readLog(s.deliveries).size();
      paused.resume();
      paused.awaitLine("LEASE-LOST", Duration.ofSeconds(30));
      s.duplicateBound = s.inFlight(); // at most the batches it had in flight when frozen
      s.awaitProduced(30);
      s.finish();

      List<Delivery> all = Delivery.readLog(s.deliveries);
      Set<UUID> lost = new HashSet<>();
      paused.lines("LEASE-LOST").forEach(l -> lost.add(UUID.fromString(l.substring("LEASE-LOST ".length()))));
      long afterThaw = 0;
      long afterNewer = 0; // of those, copies that came after a newer event of their aggregate
      for (int i = linesAtThaw; i < all.size(); i++) {
        Delivery d = all.get(i);
        if (d.pid() == paused.pid() && lost.contains(d.eventId())) {
          afterThaw++;
          afterNewer += all.subList(0, i).stream()
              .anyMatch(e -> e.aggregateId().equals(d.aggregateId()) && e.seq() > d.seq()) ? 1 : 0;
        }
      }
      for (UUID id : lost) {
        assertThat(s.store.find(id).orElseThrow().status()).as("the survivor's mark stands").isEqualTo(OutboxStatus.DISPATCHED);
      }
      System.out.printf("SIGSTOP (lease %s): %d claimed rows frozen, %d lease losses reported, %d events published by"
          + " the thawed worker after SIGCONT although taken over, %d of them after a newer event of their aggregate%n",
          s.lease(), held, lost.size(), afterThaw, afterNewer);
      // the publication it was in when frozen may complete; nothing after it
      assertThat(afterThaw).as("stolen events the thawed worker still published").isLessThanOrEqualTo(s.workersPerProcess);
    }
  }

  private static long processingOwnedBy(Scenario s, String ownerPattern) throws Exception {
    try (Connection c = s.dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + s.table
            + " WHERE status = 'PROCESSING' AND lease_owner LIKE ?")) {
      ps.setString(1, ownerPattern);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1);
      }
    }
  }
}
