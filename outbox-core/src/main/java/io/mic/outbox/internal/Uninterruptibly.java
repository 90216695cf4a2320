package io.mic.outbox.internal;

import java.util.concurrent.TimeUnit;

/**
 * A wait that interrupts do not cut short: for work a stop must let finish (the marks of what went out), on a
 * thread the stop interrupts. An interrupt that came meanwhile is set again for the caller.
 */
public final class Uninterruptibly {
  private Uninterruptibly() {}

  /** A wait bounded by the nanoseconds it is given. */
  @FunctionalInterface
  public interface TimedWait {
    boolean await(long nanos) throws InterruptedException;
  }

  /**
   * Runs {@code wait} with the time left until {@code deadline} ({@link System#nanoTime()}), again after each
   * interrupt, and returns its answer.
   */
  public static boolean until(long deadline, TimedWait wait) {
    boolean interrupted = false;
    try {
      while (true) {
        try {
          return wait.await(deadline - System.nanoTime());
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Sleeps until {@code deadline}. */
  public static void sleepUntil(long deadline) {
    until(deadline, nanos -> {
      TimeUnit.NANOSECONDS.sleep(nanos);
      return true;
    });
  }
}
