package io.mic.outbox.cli;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Progress lines of a long run on stderr: at most one per interval, with the rows so far and the rate since
 * the start ({@code purge: 12000 event(s) so far, 3400/s}). Stdout keeps only the final summary.
 */
final class Progress {
  private final PrintWriter err;
  private final String command;
  private final long intervalNanos;
  private final LongSupplier nanoClock;
  private final long start;
  private long last;

  Progress(PrintWriter err, String command, Duration interval) {
    this(err, command, interval, System::nanoTime);
  }

  Progress(PrintWriter err, String command, Duration interval, LongSupplier nanoClock) {
    this.err = err;
    this.command = command;
    this.intervalNanos = interval.toNanos();
    this.nanoClock = nanoClock;
    this.start = nanoClock.getAsLong();
    this.last = start;
  }

  /** {@code detail} follows the count. */
  void update(long rows, String detail) {
    long now = nanoClock.getAsLong();
    if (now - last < intervalNanos) {
      return;
    }
    last = now;
    err.println(command + ": " + rows + " event(s)" + detail + " so far, " + rate(rows, now - start));
  }

  private static String rate(long rows, long nanos) {
    return nanos <= 0 ? "-/s" : String.format(Locale.ROOT, "%.0f/s", rows * 1e9 / nanos);
  }
}
