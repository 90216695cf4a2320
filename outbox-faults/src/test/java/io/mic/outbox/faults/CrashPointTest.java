package io.mic.outbox.faults;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * SIGKILL of a dispatcher process at each named point of the dispatch path, while producers append and,
 * with claims, a second worker keeps dispatching (without claims, the next process starts after). Nothing
 * may be lost or reordered; what comes twice is bounded by
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
    run(point, "ordered", 3, s -> s.pipelined = false);
  }

  /**
   * Claims held by transactions: the victim's rows come back when its connections close, to the survivor
   * beside it, with no lease to wait for; order and the bound hold as with leases.
   */
  @Tag("fast")
  @ParameterizedTest(name = "SIGKILL {0}, ordered, claims held by transactions")
  @EnumSource(value = FaultPoint.class, names = "NONE", mode = EnumSource.Mode.EXCLUDE)
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killAtPointTransactionalClaims(FaultPoint point) throws Exception {
    run(point, "ordered", Servers.full() ? 3 : 1, s -> s.transactionalClaims = true);
  }

  @Tag("full")
  @ParameterizedTest(name = "SIGKILL {0}, throughput, claims held by transactions, 2 workers, deleting on dispatch")
  @EnumSource(value = FaultPoint.class, names = "NONE", mode = EnumSource.Mode.EXCLUDE)
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killAtPointTransactionalClaimsTwoWorkers(FaultPoint point) throws Exception {
    run(point, "throughput", 3, s -> {
      s.transactionalClaims = true;
      s.workersPerProcess = 2;
      s.deleteOnDispatch = true;
    });
  }

  /**
   * Without claims only one dispatcher process runs at a time: each victim is killed, then the next one
   * starts and publishes again what the last left unmarked (no lease to wait for). With deleting marks.
   */
  @Tag("full")
  @ParameterizedTest(name = "SIGKILL {0}, ordered, without claims, deleting on dispatch")
  @EnumSource(value = FaultPoint.class, names = "NONE", mode = EnumSource.Mode.EXCLUDE)
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killAtPointWithoutClaims(FaultPoint point) throws Exception {
    run(point, "ordered", 3, s -> {
      s.claim = false;
      s.deleteOnDispatch = true;
    });
  }

  @Tag("full")
  @ParameterizedTest(name = "SIGKILL {0}, throughput, without claims")
  @EnumSource(value = FaultPoint.class, names = "NONE", mode = EnumSource.Mode.EXCLUDE)
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killAtPointThroughputWithoutClaims(FaultPoint point) throws Exception {
    run(point, "throughput", 3, s -> s.claim = false);
  }

  /**
   * Two workers in one process without claims: their reads take turns and leave out each other's batches,
   * so a kill repeats what both had published and not marked, and nothing is published twice otherwise.
   * Keeping the rows, and deleting them (the configuration of the fastest end-to-end figures, performance.md).
   */
  @Tag("full")
  @ParameterizedTest(name = "SIGKILL {0}, throughput, without claims, 2 workers, deleting on dispatch: {1}")
  @MethodSource("pointsKeepingAndDeleting")
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killAtPointWithoutClaimsTwoWorkers(FaultPoint point, boolean deleteOnDispatch) throws Exception {
    run(point, "throughput", 3, s -> {
      s.claim = false;
      s.workersPerProcess = 2;
      s.deleteOnDispatch = deleteOnDispatch;
    });
  }

  static Stream<Arguments> pointsKeepingAndDeleting() {
    return Arrays.stream(FaultPoint.values()).filter(p -> p != FaultPoint.NONE)
        .flatMap(p -> Stream.of(Arguments.of(p, false), Arguments.of(p, true)));
  }

  /**
   * What one kill at {@code point} may repeat. A claim that parks published nothing of its batch; pipelined,
   * the claim of the next batch runs in the background while the worker publishes the current one, which
   * then stays unmarked. With claims that claim follows the mark of the batch before on one thread; without
   * claims the read runs beside that mark, so the batch before may be unmarked too. At the other points the
   * worker's in-flight batches went out unmarked: the one it published and, pipelined, the one before whose
   * mark was running.
   */
  static long bound(Scenario s, FaultPoint point) {
    if (point != FaultPoint.AFTER_CLAIM) {
      return s.inFlight();
    }
    if (!s.pipelined) {
      return 0;
    }
    return s.claim ? (long) s.batch * s.workersPerProcess : s.inFlight();
  }

  private static void run(FaultPoint point, String mode, int repetitions) throws Exception {
    run(point, mode, repetitions, s -> {});
  }

  /**
   * With claims a survivor dispatches beside each victim; without claims one dispatcher process runs at a
   * time, and a successor starts after the last victim.
   */
  private static void run(FaultPoint point, String mode, int repetitions, Consumer<Scenario> setUp)
      throws Exception {
    long seed = 100 + point.ordinal();
    try (Scenario s = Scenario.of("SIGKILL " + point.label(), mode, "recording", seed)) {
      setUp.accept(s);
      s.repetitions = repetitions;
      s.produce();
      if (s.claim) {
        s.worker("survivor");
      }
      for (int r = 0; r < repetitions; r++) {
        WorkerProcess victim = s.worker("victim-" + r, "fault=" + point.label(), "faultAt=3");
        victim.awaitLine("AT " + point.label(), Duration.ofSeconds(60));
        victim.kill();
        s.duplicateBound += bound(s, point);
        s.awaitProduced(30);
      }
      if (!s.claim) {
        s.worker("successor");
      }
      s.finish();
    }
  }
}
