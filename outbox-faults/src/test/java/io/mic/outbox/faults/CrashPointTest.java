package io.mic.outbox.faults;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * SIGKILL of a dispatcher process at each named point of the dispatch path, while producers append and
 * a second worker keeps dispatching. Nothing may be lost or reordered; what comes twice is bounded by
 * what the killed worker had published and not marked.
 */
class CrashPointTest {

  @Tag("fast")
  @ParameterizedTest(name = "SIGKILL {0}, ordered")
  @EnumSource(value = FaultPoint.class, names = "NONE", mode = EnumSource.Mode.EXCLUDE)
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killAtPointOrdered(FaultPoint point) throws Exception {
    run(point, "ordered", Servers.full() ? 3 : 1);
  }

  @Tag("full")
  @ParameterizedTest(name = "SIGKILL {0}, throughput")
  @EnumSource(value = FaultPoint.class, names = "NONE", mode = EnumSource.Mode.EXCLUDE)
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killAtPointThroughput(FaultPoint point) throws Exception {
    run(point, "throughput", 3);
  }

  private static void run(FaultPoint point, String mode, int repetitions) throws Exception {
    long seed = 100 + point.ordinal();
    try (Scenario s = Scenario.of("SIGKILL " + point.label(), mode, "recording", seed)) {
      s.repetitions = repetitions;
      s.produce();
      s.worker("survivor");
      for (int r = 0; r < repetitions; r++) {
        WorkerProcess victim = s.worker("victim-" + r, "fault=" + point.label(), "faultAt=3");
        victim.awaitLine("AT " + point.label(), Duration.ofSeconds(60));
        victim.kill();
        // after the claim nothing went out; at the other points the batch (at most) went out unmarked
        s.duplicateBound += point == FaultPoint.AFTER_CLAIM ? 0 : (long) s.batch * s.workersPerProcess;
        s.awaitProduced(30);
      }
      s.finish();
    }
  }
}
