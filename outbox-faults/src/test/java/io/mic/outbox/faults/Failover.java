package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.Callable;
import org.awaitility.Awaitility;

/**
 * The steps the cluster scenarios share: a fault that comes while the workers drain a backlog, progress
 * read from the broker's own count of what it holds, and the check that a failover burned no attempt.
 */
final class Failover {
  /** Events appended before the workers start: the fault comes while they drain them. */
  static final int BACKLOG = 200;
  /**
   * The producers' pause between transactions: slow enough that two workers keep up with a replicated
   * stream on a shared machine, so what stands still is the fault's doing, not a backlog.
   */
  static final long PRODUCER_PAUSE_MS = 100;

  private Failover() {}

  /**
   * Lets a backlog build before two workers start, waits until they drained a third of it, and starts
   * measuring how long publication stands still; {@code held} counts the events the broker holds.
   */
  static void midDrain(Scenario s, Callable<Long> held) throws Exception {
    s.producerPauseMs = PRODUCER_PAUSE_MS;
    s.produce();
    s.awaitProduced(BACKLOG);
    s.worker("w1");
    s.worker("w2");
    awaitMore(held, BACKLOG / 3);
    s.watchStall(held);
  }

  /** Waits until the broker holds {@code n} more events than now: publication goes on. */
  static void awaitMore(Callable<Long> held, long n) {
    long target = Awaitility.await().atMost(Duration.ofSeconds(60)).ignoreExceptions().until(held, x -> true) + n;
    Awaitility.await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .until(() -> held.call() >= target);
  }

  /**
   * The duplicates a broker that keeps every copy (RabbitMQ, Kafka) may hold after a failover: the in-flight
   * window cut off by the fault, and every event the workers put back as unavailable meanwhile, whose send
   * timed out with its outcome unknown (Kafka: the leader appended it and waited for replicas that were gone;
   * they copy it once they are back). {@link Scenario#finish()} adds the latter once the backlog is drained.
   */
  static void boundDuplicatesByReleases(Scenario s) {
    s.duplicateBound = s.inFlight();
    s.unavailableMayRepeat = true;
  }

  /** Lets {@code length} pass: the outage is a duration, not a condition. */
  static void outage(Duration length) {
    long start = System.nanoTime();
    Awaitility.await().atMost(length.plusSeconds(30)).until(() -> System.nanoTime() - start > length.toNanos());
  }

  /** A failover is an outage: no publication may count an attempt for it (every row ends with 1). */
  static void assertNoAttemptBurned(Scenario s) throws Exception {
    try (Connection c = s.dataSource.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT max(attempts) FROM " + s.table)) {
      rs.next();
      assertThat(rs.getInt(1)).as("a failover burns no attempt").isEqualTo(1);
    }
  }
}
