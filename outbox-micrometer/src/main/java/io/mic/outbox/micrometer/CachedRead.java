package io.mic.outbox.micrometer;

import java.time.Duration;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One store read shared by several gauges. The first gauge read after the interval has passed reads the
 * store on its own thread; every other read, however many gauges and scrapes, gets the remembered value.
 * Reading on demand instead of on a timer means no thread to own and no query while nobody scrapes.
 */
final class CachedRead<T> {
  private static final Logger LOG = LoggerFactory.getLogger(CachedRead.class);

  private final String what;
  private final Supplier<T> read;
  private final long intervalNanos;
  private final LongSupplier monotonicNanos;
  /** Makes concurrent scrapes wait for one read instead of each starting its own. */
  private final ReentrantLock lock = new ReentrantLock();
  private volatile Entry<T> last;
  private boolean failing;

  /** {@code value} is null when the read failed: the failure is remembered as long as a value would be. */
  private record Entry<T>(T value, long readAtNanos) {}

  CachedRead(String what, Supplier<T> read, Duration interval, LongSupplier monotonicNanos) {
    this.what = what;
    this.read = read;
    this.intervalNanos = interval.toNanos();
    this.monotonicNanos = monotonicNanos;
  }

  /** @return the value read at most one interval ago, or null when that read failed */
  T get() {
    Entry<T> e = last;
    if (isFresh(e)) {
      return e.value();
    }
    lock.lock();
    try {
      e = last;
      if (isFresh(e)) {
        return e.value();
      }
      T value = readOrNull();
      // stamped after the read, so a slow store is still queried at most once per interval
      last = new Entry<>(value, monotonicNanos.getAsLong());
      return value;
    } finally {
      lock.unlock();
    }
  }

  private boolean isFresh(Entry<T> e) {
    return e != null && monotonicNanos.getAsLong() - e.readAtNanos() < intervalNanos;
  }

  private T readOrNull() {
    try {
      T value = read.get();
      if (failing) {
        LOG.info("outbox gauges: {} can be read again", what);
        failing = false;
      }
      return value;
    } catch (RuntimeException e) {
      if (!failing) {
        LOG.warn("outbox gauges: reading {} failed; the gauges report NaN and retry every {} ms", what,
            intervalNanos / 1_000_000, e);
        failing = true;
      } else {
        LOG.debug("outbox gauges: reading {} failed again", what, e);
      }
      return null;
    }
  }
}
