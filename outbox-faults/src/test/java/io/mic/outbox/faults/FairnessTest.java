package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How two dispatcher processes share ordered claims (default settings, claims, per-aggregate order) under a
 * steady load: each process's share of the publications, and the longest stretch one of them published
 * nothing while the other did. Nothing may be lost or reordered; both must publish.
 */
class FairnessTest {

  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void twoProcessesShareOrderedClaims() throws Exception {
    try (Scenario s = Scenario.of("two processes sharing ordered claims", "ordered", "recording", 131)) {
      s.leaseMs = 0;
      s.pollMs = 0;
      s.produce();
      WorkerProcess a = s.worker("a");
      WorkerProcess b = s.worker("b");
      s.awaitProduced(2_000);
      s.finish();

      List<long[]> published = new ArrayList<>(); // pid, wall clock millis
      for (String line : Files.readAllLines(s.deliveries)) {
        String[] f = line.split(" ");
        published.add(new long[] {Long.parseLong(f[3]), Long.parseLong(f[4])});
      }
      long byA = published.stream().filter(p -> p[0] == a.pid()).count();
      long byB = published.stream().filter(p -> p[0] == b.pid()).count();
      long idleA = longestIdle(published, a.pid());
      long idleB = longestIdle(published, b.pid());
      System.out.printf("ordered claims, two processes: %d and %d publications; longest stretch one published"
          + " nothing while the other did: %.1f s and %.1f s%n", byA, byB, idleA / 1000.0, idleB / 1000.0);
      assertThat(byA).as("publications by the first process").isPositive();
      assertThat(byB).as("publications by the second process").isPositive();
    }
  }

  /** The longest time between two publications of {@code pid} during which the other process published. */
  private static long longestIdle(List<long[]> published, long pid) {
    long longest = 0;
    long last = -1;
    boolean otherMeanwhile = false;
    for (long[] p : published) {
      if (p[0] == pid) {
        if (last >= 0 && otherMeanwhile) {
          longest = Math.max(longest, p[1] - last);
        }
        last = p[1];
        otherMeanwhile = false;
      } else {
        otherMeanwhile = true;
      }
    }
    return longest;
  }
}
