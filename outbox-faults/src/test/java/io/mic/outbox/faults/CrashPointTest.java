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
 * what the killed worker had published and not marked: up to two batches per dispatcher thread when
 * pipelined (the default), one batch without.
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

  @Tag("full")
  @ParameterizedTest(name = "SIGKILL {0}, ordered, not pipelined")
  @EnumSource(value = FaultPoint.class, names = "NONE", mode = EnumSource.Mode.EXCLUDE)
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killAtPointNotPipelined(FaultPoint point) throws Exception {
    run(point, "ordered", 3, false);
  }

  /**
   * What one kill at {@code point} may repeat. A claim that parks published nothing of its batch; pipelined,
   * the claim of the next batch runs in the background while the worker publishes the current one, which
   * then stays unmarked. At the other points the worker's in-flight batches went out unmarked: the one it
   * published and, pipelined, the one before whose mark was running.
   */
  static long bound(Scenario s, FaultPoint point) {
    if (point == FaultPoint.AFTER_CLAIM) {
      return s.pipelined ? (long) s.batch * s.workersPerProcess : 0;
    }
    return s.inFlight();
  }

  private static void run(FaultPoint point, String mode, int repetitions) throws Exception {
    run(point, mode, repetitions, true);
  }

  private static void run(FaultPoint point, String mode, int repetitions, boolean pipelined) throws Exception {
    long seed = 100 + point.ordinal();
    try (Scenario s = Scenario.of("SIGKILL " + point.label(), mode, "recording", seed)) {
      s.pipelined = pipelined;
      s.repetitions = repetitions;
      s.produce();
      s.worker("survivor");
      for (int r = 0; r < repetitions; r++) {
        WorkerProcess victim = s.worker("victim-" + r, "fault=" + point.label(), "faultAt=3");
        victim.awaitLine("AT " + point.label(), Duration.ofSeconds(60));
        victim.kill();
        s.duplicateBound += bound(s, point);
        s.awaitProduced(30);
      }
      s.finish();
    }
  }
}
