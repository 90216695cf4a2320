package io.mic.outbox;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A pipelined worker's next batch, claimed (or read) on a thread of its own while the worker publishes the
 * current one. At most one batch waits ahead.
 */
final class ReadAhead {
  private static final Logger LOG = LoggerFactory.getLogger(AsyncOutboxDispatcher.class);

  private final String worker;
  private final BatchReader reader;
  private final ReadCursor cursor;
  private final ExecutorService thread;
  private Future<Batch> ahead;

  ReadAhead(String worker, BatchReader reader, ReadCursor cursor) {
    this.worker = worker;
    this.reader = reader;
    this.cursor = cursor;
    this.thread = Executors.newSingleThreadExecutor(DaemonThreads.named(worker + "-read-"));
  }

  /** The read's thread; with claims the worker marks on it too, so that a claim never runs beside a mark. */
  ExecutorService thread() {
    return thread;
  }

  void start() {
    ahead = thread.submit(() -> cursor.next(reader));
  }

  boolean waiting() {
    return ahead != null;
  }

  /** The batch read ahead; {@code null} when interrupted, and the batch then stays ahead for the next turn. */
  Batch take() {
    try {
      Batch batch = ahead.get();
      ahead = null;
      return batch;
    } catch (InterruptedException e) {
      // not dropped: its events are left out of every read (or leased) until it is published or released
      Thread.currentThread().interrupt();
      return null;
    } catch (ExecutionException e) {
      ahead = null;
      if (e.getCause() instanceof RuntimeException r) {
        throw r; // the claim failed: a failed poll
      }
      throw new OutboxException("claiming the next batch failed", e.getCause());
    }
  }

  /**
   * A batch claimed ahead goes back untried (pause or stop). The release runs on the read's thread after
   * the claim, so an interrupt of this worker (stop() after its timeout) cannot skip it: a batch claimed
   * and never released would keep its leases, renewed in the background, while the JVM runs.
   */
  void abandon(ReleaseReason reason) {
    Future<Batch> claimed = ahead;
    if (claimed == null) {
      return;
    }
    ahead = null;
    Future<?> released = thread.submit(() -> release(claimed, reason));
    try {
      released.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt(); // the release still runs
    } catch (ExecutionException e) {
      LOG.debug("{}: releasing the batch claimed ahead failed", worker, e.getCause());
    }
  }

  private void release(Future<Batch> claimed, ReleaseReason reason) {
    Batch batch;
    try {
      batch = claimed.get(); // done: it ran before this task on the same thread
    } catch (InterruptedException | ExecutionException e) {
      return; // the claim failed: nothing was claimed
    }
    if (batch == null) {
      return;
    }
    try {
      batch.abandon(reason);
    } catch (RuntimeException e) {
      LOG.debug("{}: the batch claimed ahead could not be released; its leases run out", worker, e);
    } finally {
      cursor.done(batch);
    }
  }

  /** Ends the read's thread; whether it ended before {@code deadline} ({@link System#nanoTime()}). */
  boolean end(long deadline) {
    thread.shutdown();
    return DaemonThreads.ended(thread, deadline);
  }
}
