package io.mic.outbox;

import io.mic.outbox.internal.Uninterruptibly;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The library's own threads: named ({@code mic-outbox-dispatcher-1}), daemons so they never hold the JVM up,
 * and ended within a deadline.
 */
final class DaemonThreads {
  private DaemonThreads() {}

  static ThreadFactory named(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }

  /** Waits for {@code pool} to end until {@code deadline} ({@link System#nanoTime()}), through interrupts, which it keeps. */
  static boolean ended(ExecutorService pool, long deadline) {
    return Uninterruptibly.until(deadline, nanos -> pool.awaitTermination(nanos, TimeUnit.NANOSECONDS));
  }
}
