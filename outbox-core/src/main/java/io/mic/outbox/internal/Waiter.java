package io.mic.outbox.internal;

import java.time.Duration;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * A sleep that {@link #wakeAll()} cuts short. Callers read {@link #generation()} before their work and
 * pass it to {@link #await}: a wake-up that came during the work skips the next sleep, so none is lost.
 */
public final class Waiter {
  private final ReentrantLock lock = new ReentrantLock();
  private final Condition changed = lock.newCondition();
  private long generation;

  public long generation() {
    lock.lock();
    try {
      return generation;
    } finally {
      lock.unlock();
    }
  }

  public void wakeAll() {
    lock.lock();
    try {
      generation++;
      changed.signalAll();
    } finally {
      lock.unlock();
    }
  }

  /** Sleeps {@code timeout} whatever the wake-ups, unless {@code stop} holds (checked at each wake-up). */
  public void sleep(Duration timeout, BooleanSupplier stop) throws InterruptedException {
    long remaining = timeout.toNanos();
    lock.lock();
    try {
      while (remaining > 0 && !stop.getAsBoolean()) {
        remaining = changed.awaitNanos(remaining);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Sleeps up to {@code timeout}, unless woken since {@code seen} or {@code stop} holds. */
  public void await(long seen, Duration timeout, BooleanSupplier stop) throws InterruptedException {
    long remaining = timeout.toNanos();
    lock.lock();
    try {
      while (generation == seen && remaining > 0 && !stop.getAsBoolean()) {
        remaining = changed.awaitNanos(remaining);
      }
    } finally {
      lock.unlock();
    }
  }

}
