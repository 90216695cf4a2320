package io.mic.outbox;

import io.mic.outbox.spi.BatchChannel;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker's batches. Pipelined, a worker publishes batch N while its background threads mark batch N-1
 * and claim (or read) batch N+1 (only when more is probably waiting: after a full batch), so database round
 * trips overlap broker round trips. Without claims the read and the mark run at once, each on a thread of
 * its own: the mark's commit waits for the database's log flush, and the read works meanwhile; the read
 * leaves out every batch in flight ({@link ReadCursor}), whose events stay {@code PENDING} until their marks
 * commit. With claims one thread claims after it marked: a claim beside a mark, two updates of the same
 * index pages, measured slower. A worker that published a batch waits for the mark of the batch before: at
 * most one mark and one batch claimed ahead wait at any time, so a worker has published and not marked at
 * most two batches (what a crash may repeat). In throughput mode, through a {@link BatchChannel} that
 * returns before a batch's outcomes are in, a worker sends its next batch before it settles the last one,
 * so the broker's window does not run dry between batches; it has then published and not marked at most
 * three. Without pipelining each step waits for the last.
 */
final class Pipeline {
  private static final Logger LOG = LoggerFactory.getLogger(AsyncOutboxDispatcher.class);

  private final DispatchSettings s;
  private final BatchReader reader;
  private final WorkerChannel channel;
  private final ReadCursor cursor;
  private final RunState state;
  private final ReadAhead ahead;
  private final ExecutorService marker;
  /** Throughput mode: the batch sent last, whose outcomes may still be arriving, settled after the next went out. */
  private Batch sent;
  /** The mark of the batch settled last, running in the background. */
  private Future<?> marking;

  Pipeline(DispatchSettings s, BatchReader reader, WorkerChannel channel, ReadCursor cursor, RunState state,
      boolean pipelined) {
    this.s = s;
    this.reader = reader;
    this.channel = channel;
    this.cursor = cursor;
    this.state = state;
    this.ahead = pipelined ? new ReadAhead(s.worker(), reader, cursor) : null;
    this.marker = !pipelined ? null : s.useClaim() ? ahead.thread()
        : Executors.newSingleThreadExecutor(DaemonThreads.named(s.worker() + "-mark-"));
  }

  /** @return whether more is probably waiting ({@link Batch#moreWaiting}) */
  boolean dispatchOnce() {
    Batch batch;
    try {
      batch = ahead != null && ahead.waiting() ? ahead.take() : cursor.next(reader);
    } catch (RuntimeException | Error e) {
      settleAfter(e); // the read failed: what went out is settled and marked all the same
      throw e;
    }
    if (batch == null) {
      settleSent();
      return false;
    }
    boolean more = batch.moreWaiting();
    if (ahead == null) {
      try {
        batch.send();
        batch.settle();
        batch.finish();
      } finally {
        cursor.done(batch);
      }
      return more;
    }
    boolean goingOn = more && flowing();
    if (goingOn) {
      ahead.start();
    }
    try {
      batch.send();
    } catch (RuntimeException | Error e) {
      cursor.done(batch); // send() finished the batch
      settleAfter(e);
      throw e;
    }
    settleSent(); // the batch sent before this one, whose last outcomes arrived while this one went out
    sent = batch;
    if (!goingOn || s.ordered() || !channel.overlapping() || !batch.awaitingOutcomes() || !flowing()) {
      settleSent(); // no next batch follows at once, nothing would overlap, or it failed: settled now
    }
    return more;
  }

  private boolean flowing() {
    return state.running() && !state.paused() && channel.outage().pause() == null;
  }

  private void settleAfter(Throwable failure) {
    try {
      settleSent();
    } catch (RuntimeException | Error e) {
      failure.addSuppressed(e);
    }
  }

  /** {@link #settleSent()} outside a poll (pause, stop): a failure is logged and reported as a failed poll. */
  private void settleQuietly() {
    try {
      settleSent();
    } catch (RuntimeException e) {
      LOG.warn("{}: settling the batch sent last failed; its events are published again (at-least-once)",
          s.worker(), e);
      s.listener().onPollFailed(e);
    }
  }

  /**
   * Settles the batch sent last, if any, then marks it in the background once the mark before it is done:
   * one mark overlaps the publications, so a crash repeats at most the batch being marked, the batch
   * settled and the batch sent after it.
   */
  private void settleSent() {
    Batch batch = sent;
    if (batch == null) {
      return;
    }
    sent = null;
    try {
      batch.settle();
    } catch (RuntimeException | Error e) {
      cursor.done(batch); // settle() finished the batch
      throw e;
    }
    awaitLastMark();
    marking = marker.submit(() -> finish(batch));
  }

  private void awaitLastMark() {
    Future<?> last = marking;
    marking = null;
    if (last == null) {
      return;
    }
    try {
      last.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (ExecutionException e) {
      // finish() reports its own failures
    }
  }

  private void finish(Batch batch) {
    try {
      batch.finish();
    } catch (RuntimeException e) {
      LOG.warn("{}: marking a published batch failed; its events are published again (at-least-once; with"
          + " claims once their leases run out)", s.worker(), e);
      s.listener().onPollFailed(e);
    } finally {
      cursor.done(batch);
    }
  }

  void pause(ReleaseReason reason) {
    settleQuietly();
    if (ahead != null) {
      ahead.abandon(reason);
    }
  }

  /**
   * Releases what was claimed ahead and lets the last marks finish until stop() gives up, also when stop()
   * interrupted this worker: that interrupt stops a publication, not the marks of what went out.
   */
  void close() {
    pause(ReleaseReason.STOPPING);
    channel.close();
    if (ahead != null) {
      marker.shutdown();
      long deadline = state.stopDeadline();
      if (!ahead.end(deadline) || !DaemonThreads.ended(marker, deadline)) {
        LOG.warn("{}: the last marks, or the release of the batch claimed ahead, did not finish; their"
            + " events return when their leases run out", s.worker());
      }
    }
  }
}
