package io.mic.outbox.test;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Publishers that misbehave on purpose, to test how the application's dispatcher configuration
 * (attempts, backoff, lease, listener, alerts) copes. Each wraps the publisher that does the real work
 * once the fault has passed, often a {@link RecordingDispatchFn}. Thread-safe.
 *
 * <pre>{@code
 * RecordingDispatchFn published = new RecordingDispatchFn();
 * FaultyPublisher flaky = FaultyPublisher.failingTimes(2, published);   // each event fails twice, then goes out
 * FaultyPublisher down = FaultyPublisher.unavailableFor(Duration.ofSeconds(2), published);
 * FaultyPublisher slow = FaultyPublisher.hanging(Duration.ofSeconds(90), published);  // past a 60 s lease
 * }</pre>
 *
 * <p>A wrapped batch publisher is called one event at a time.
 */
public final class FaultyPublisher implements DispatchFn {
  private final DispatchFn then;
  private final Fault fault;
  private final Map<UUID, AtomicInteger> calls = new ConcurrentHashMap<>();
  private final AtomicInteger faults = new AtomicInteger();

  private FaultyPublisher(DispatchFn then, Fault fault) {
    this.then = Objects.requireNonNull(then, "then");
    this.fault = fault;
  }

  /**
   * Fails the first {@code times} publications of every event with a {@link SimulatedPublishException}
   * (an attempt is counted), then passes it on to {@code then}.
   */
  public static FaultyPublisher failingTimes(int times, DispatchFn then) {
    requireNonNegative("times", times);
    return new FaultyPublisher(then, (event, call) -> {
      if (call <= times) {
        throw new SimulatedPublishException("simulated failure " + call + " of " + times + " for event "
            + event.id());
      }
    });
  }

  /**
   * Answers every publication with {@link PublishUnavailableException} (no attempt is counted) until
   * {@code duration} has passed since the first one, then passes events on to {@code then}.
   */
  public static FaultyPublisher unavailableFor(Duration duration, DispatchFn then) {
    requirePositive("duration", duration);
    AtomicLong firstCall = new AtomicLong();
    return new FaultyPublisher(then, (event, call) -> {
      long now = System.nanoTime();
      firstCall.compareAndSet(0, now);
      if (now - firstCall.get() < duration.toNanos()) {
        throw new PublishUnavailableException("simulated broker outage of " + duration);
      }
    });
  }

  /**
   * Holds every publication for {@code duration} before passing it on to {@code then}, like a broker that
   * stops answering; choose more than the dispatcher's {@code leaseTtl} to test what a stalled publication
   * does. Stops early, with {@link InterruptedException}, when the dispatcher interrupts it on close.
   */
  public static FaultyPublisher hanging(Duration duration, DispatchFn then) {
    requirePositive("duration", duration);
    return new FaultyPublisher(then, (event, call) -> Thread.sleep(duration.toMillis()));
  }

  @Override
  public void dispatch(OutboxEvent event) throws Exception {
    int call = calls.computeIfAbsent(event.id(), id -> new AtomicInteger()).incrementAndGet();
    try {
      fault.apply(event, call);
    } catch (Exception e) {
      faults.incrementAndGet();
      throw e;
    }
    then.dispatch(event);
  }

  /** How many times this event reached this publisher, failed calls included. */
  public int calls(UUID id) {
    return calls.getOrDefault(id, new AtomicInteger()).get();
  }

  /** How many publications failed because of the simulated fault. */
  public int faults() {
    return faults.get();
  }

  private static void requireNonNegative(String name, int value) {
    if (value < 0) {
      throw new IllegalArgumentException(name + " must be >= 0, was " + value);
    }
  }

  private static void requirePositive(String name, Duration value) {
    if (value == null || value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException(name + " must be > 0, was " + value);
    }
  }

  @FunctionalInterface
  private interface Fault {
    void apply(OutboxEvent event, int call) throws Exception;
  }

  /** The failure {@link #failingTimes} throws: the broker refused the event (an attempt is counted). */
  public static final class SimulatedPublishException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SimulatedPublishException(String message) {
      super(message);
    }
  }
}
