package io.mic.outbox.faults;

import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * Measures how long publication stood still: a thread reads how many events the broker holds every 100 ms
 * while the producers keep appending, and keeps the longest stretch without a new one (the seconds a fault
 * left the outbox stuck) and the first new event after a given moment (when the broker was back). A read
 * that fails (the broker is down) counts as no progress.
 */
final class Stall implements AutoCloseable {
  private static final long SAMPLE_MILLIS = 100;

  private final Callable<Long> delivered;
  private final Thread thread;
  private long lastCount = -1;
  private long lastProgress = System.nanoTime();
  private long longest;
  private volatile boolean running = true;
  private Long backAt;
  private Long firstAfterBack;

  private Stall(Callable<Long> delivered) {
    this.delivered = delivered;
    this.thread = new Thread(this::run, "faults-stall");
    this.thread.setDaemon(true);
  }

  /** Starts sampling {@code delivered}, the number of events the broker holds. */
  static Stall watch(Callable<Long> delivered) {
    Stall s = new Stall(delivered);
    s.thread.start();
    return s;
  }

  private void run() {
    while (running) {
      try {
        long count = delivered.call();
        progress(count);
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        // the broker does not answer: no progress
      }
      try {
        Thread.sleep(SAMPLE_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  private synchronized void progress(long count) {
    long now = System.nanoTime();
    if (count > lastCount) {
      if (lastCount >= 0) {
        longest = Math.max(longest, now - lastProgress);
      }
      if (backAt != null && firstAfterBack == null) {
        firstAfterBack = now - backAt;
      }
      lastCount = count;
      lastProgress = now;
    }
  }

  /** The broker takes events again from now on: {@link #afterBack()} counts from here. */
  synchronized void back() {
    backAt = System.nanoTime();
  }

  /** Seconds from {@link #back()} to the first new event the broker held; {@code NaN} if none came. */
  synchronized double afterBack() {
    return firstAfterBack == null ? Double.NaN : firstAfterBack / 1e9;
  }

  /** The longest stretch without a new event so far, in seconds. */
  synchronized double longest() {
    return longest / 1e9;
  }

  /** What the results show: the longest stall, and how much of it came after the broker was back. */
  synchronized String describe() {
    return String.format(Locale.ROOT, "%.1f", longest()) + (backAt == null ? ""
        : String.format(Locale.ROOT, " (%.1f after the return)", afterBack()));
  }

  @Override
  public void close() throws InterruptedException {
    running = false;
    thread.join(TimeUnit.SECONDS.toMillis(10));
  }
}
