package io.mic.outbox;

import io.mic.outbox.internal.Waiter;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What an {@link AsyncOutboxDispatcher}'s lifecycle tells its workers: whether they run, whether polling is
 * paused, which start they belong to, when the running stop gives up, and the wake-ups.
 */
final class RunState {
  private final Waiter waiter = new Waiter();
  private volatile boolean running;
  private final AtomicBoolean paused = new AtomicBoolean();
  /** Counts the starts; a worker task of an earlier one that runs late ends at once. */
  private volatile int starts;
  /** When the running stop() gives up, in {@link System#nanoTime()}; last marks may wait until then. */
  private volatile long stopDeadline;

  /** @return the generation of this start; called under the lifecycle's lock */
  int start() {
    running = true;
    return ++starts;
  }

  void stop(long deadlineNanos) {
    stopDeadline = deadlineNanos;
    running = false;
  }

  boolean running() {
    return running;
  }

  /** Whether a worker of start {@code generation} should go on polling. */
  boolean runs(int generation) {
    return running && generation == starts;
  }

  boolean isCurrent(int generation) {
    return generation == starts;
  }

  long stopDeadline() {
    return stopDeadline;
  }

  boolean paused() {
    return paused.get();
  }

  /** @return whether it changed anything: of two callers at once, one only */
  boolean pause(boolean pause) {
    return paused.compareAndSet(!pause, pause);
  }

  Waiter waiter() {
    return waiter;
  }
}
