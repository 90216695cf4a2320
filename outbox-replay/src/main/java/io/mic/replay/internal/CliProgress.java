package io.mic.replay.internal;

import io.mic.replay.ReplayProgress;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Locale;

/** Progress lines on stderr, at most one per interval: records read while sorting, then events published. */
public final class CliProgress implements ReplayProgress {
  private final PrintStream err;
  private final long intervalNanos;
  private final long start = System.nanoTime();
  private long lastReport = start;

  public CliProgress(PrintStream err, Duration interval) {
    this.err = err;
    this.intervalNanos = interval.toNanos();
  }

  @Override
  public void read(long records, long selected) {
    if (due()) {
      err.printf(Locale.ROOT, "progress: %d records read (%.0f/s), %d selected%n", records, rate(records), selected);
    }
  }

  @Override
  public void published(long count) {
    if (due()) {
      err.printf(Locale.ROOT, "progress: %d events published (%.0f/s since the start)%n", count, rate(count));
    }
  }

  private boolean due() {
    if (intervalNanos <= 0) {
      return false;
    }
    long now = System.nanoTime();
    if (now - lastReport < intervalNanos) {
      return false;
    }
    lastReport = now;
    return true;
  }

  private double rate(long count) {
    double seconds = (System.nanoTime() - start) / 1e9;
    return seconds <= 0 ? 0 : count / seconds;
  }
}
