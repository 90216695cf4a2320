package io.mic.outbox;

import io.mic.outbox.internal.Waiter;

/**
 * What an {@link AsyncOutboxDispatcher}'s lifecycle tells its workers: whether they run, whether polling is
 * paused, which start they belong to, when the running stop gives up, and the wake-ups.
 */
final class RunState {
  private final Waiter waiter = new Waiter();
  private volatile boolean running;
  private volatile boolean paused;
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
    return paused;
  }

  /** @return whether it changed anything */
  boolean pause(boolean pause) {
    if (paused == pause) {
      return false;
    }
    paused = pause;
    return true;
  }

  Waiter waiter() {
    return waiter;
  }
}
