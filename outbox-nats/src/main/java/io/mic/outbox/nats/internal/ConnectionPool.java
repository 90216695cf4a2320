package io.mic.outbox.nats.internal;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;

/**
 * A publisher's connections, each a {@link ConnectionSource} (so each connects on first use and is replaced
 * on its own when found dead). A publication leases the connection with the fewest publications running, the
 * first idle one if any: batches published at the same time (several dispatcher workers) go over connections
 * of their own, which the server reads in parallel, while publications one after the other always take the
 * first, and the others are never opened.
 */
public final class ConnectionPool implements AutoCloseable {
  private final List<ConnectionSource> sources;
  /** The publications running on each source. */
  private final AtomicIntegerArray running;

  public ConnectionPool(List<ConnectionSource> sources) {
    if (sources.isEmpty()) {
      throw new IllegalArgumentException("a pool needs at least one connection source");
    }
    this.sources = List.copyOf(sources);
    this.running = new AtomicIntegerArray(sources.size());
  }

  /** The source to publish with until the lease is closed. */
  public Lease lease() {
    int least = 0;
    for (int i = 0; i < sources.size(); i++) {
      if (running.compareAndSet(i, 0, 1)) {
        return new Lease(i);
      }
      if (running.get(i) < running.get(least)) {
        least = i;
      }
    }
    running.incrementAndGet(least); // every one is busy: share the least busy
    return new Lease(least);
  }

  /** The first source: for calls that need one connection, whichever (stream checks, messages). */
  public ConnectionSource first() {
    return sources.get(0);
  }

  /**
   * Whether every connection a publication may get answers (see {@link ConnectionSource#ready}); the first is
   * opened if needed, the others are asked only once opened.
   */
  public boolean ready(Duration timeout) throws InterruptedException {
    for (int i = 0; i < sources.size(); i++) {
      if (!sources.get(i).ready(timeout, i == 0)) {
        return false;
      }
    }
    return true;
  }

  @Override
  public void close() {
    sources.forEach(ConnectionSource::close);
  }

  /** One publication's use of a source; closing it lets the next publication have the source. */
  public final class Lease implements AutoCloseable {
    private final int index;
    private boolean closed;

    private Lease(int index) {
      this.index = index;
    }

    public ConnectionSource source() {
      return sources.get(index);
    }

    @Override
    public void close() {
      if (!closed) {
        closed = true;
        running.decrementAndGet(index);
      }
    }
  }
}
