package io.mic.outbox;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Where the workers of one {@link AsyncOutboxDispatcher} read next, and what they have in flight.
 *
 * <p>Without claims, the batches that the workers have read and not yet marked: their events stay
 * {@code PENDING} until their marks commit, so every read leaves them out, and the reads of all workers
 * take turns, so that no two read the same event. A batch leaves only when it is finished: after its mark
 * committed (or failed), or when it went back untried, so a read that no longer leaves it out starts after
 * that commit. With claims the leases (or row locks) keep batches apart in the store, so the claims of the
 * workers run at once: a lease's claim writes every row it takes, and taking turns capped two workers at
 * what one claim statement at a time could take (against Kafka, 0.49 of the raw producer against 0.69).
 */
final class ReadCursor {
  private final boolean useClaim;
  private final boolean ordered;
  private final Set<Batch> inFlight = ConcurrentHashMap.newKeySet();
  /** Throughput mode: the last event of the last read, if that read was full; the next read goes on from it. */
  private OutboxEvent position; // guarded by this
  private final long fromStartEvery;
  /** When the last read from the start began ({@link System#nanoTime()}). */
  private long fromStartNanos; // guarded by this
  /** Set when a batch ended with events not dispatched, or a topic resumed: events before the position wait. */
  private final AtomicBoolean fromStart = new AtomicBoolean(true);

  ReadCursor(boolean useClaim, boolean ordered, Duration pollInterval) {
    this.useClaim = useClaim;
    this.ordered = ordered;
    this.fromStartEvery = Math.min(pollInterval.toNanos(), TimeUnit.SECONDS.toNanos(1));
  }

  /**
   * In throughput mode a read (or claim) of a backlog goes on after the last event of the one before it,
   * instead of stepping over the events in flight again ({@link OutboxStore#fetchPendingAfter},
   * {@link ClaimRequest#after}): a claim held by a transaction stepped over each locked row of the batches in
   * flight, which more than doubled its cost with two workers. What became available before that place
   * meanwhile waits for the next read from the start: once per poll interval (at least once a second), at once
   * after a read going on that came back short (its store may stop at the end of a priority: the batch is
   * published all the same, and the worker polls again without waiting), and after every batch that did not
   * dispatch all its events or a topic resumed here. Claims running at once may go on from the same place;
   * the later one steps over what the other took, and the one that ends last sets the next place.
   */
  Batch next(BatchReader reader) {
    if (useClaim && ordered) {
      return reader.next();
    }
    if (useClaim) {
      return read(reader);
    }
    synchronized (this) {
      return read(reader);
    }
  }

  private Batch read(BatchReader reader) {
    OutboxEvent from = goingOnFrom();
    // only a finished batch can leave while a read runs: leaving it out or not is then equally right
    Batch batch = from == null ? null : reader.next(inFlight, from);
    if (batch == null) {
      readingFromTheStart();
      batch = reader.next(inFlight, null);
    }
    read(batch);
    return batch;
  }

  /** The event the next read goes on after, or {@code null} when it reads from the start. */
  private synchronized OutboxEvent goingOnFrom() {
    boolean fromTheStart = fromStart.getAndSet(false) || System.nanoTime() - fromStartNanos >= fromStartEvery;
    return fromTheStart ? null : position;
  }

  private synchronized void readingFromTheStart() {
    fromStartNanos = System.nanoTime();
  }

  private synchronized void read(Batch batch) {
    if (batch != null) {
      inFlight.add(batch);
    }
    position = !ordered && batch != null ? batch.lastIfFull() : null;
  }

  /** The batch is finished: marked, failed to mark, or gone back untried. */
  void done(Batch batch) {
    inFlight.remove(batch);
    if (!batch.allDispatched()) {
      readFromTheStart(); // after the batch left, so a read that takes the flag no longer leaves it out
    }
  }

  void readFromTheStart() {
    fromStart.set(true);
  }
}
