package io.mic.outbox;

import io.mic.outbox.internal.ErrorText;
import io.mic.outbox.internal.Waiter;
import io.mic.outbox.spi.BrokerProbe;
import java.time.Duration;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one worker knows of a broker outage: how long it has lasted, how long to wait before the next
 * batch, and when to say so again. The first unavailable publication is logged at WARN with its cause
 * (the publisher names the subject or queue); while the outage lasts, a summary is logged at most every
 * {@link #WARN_EVERY}; the end of the outage is logged at INFO.
 *
 * <p>The wait after a batch the broker could not take is {@link #waitOut}: the backoff, cut short when the
 * publisher's {@link BrokerProbe} saw the broker go and come back meanwhile.
 */
final class BrokerOutage {
  /** The longest wait between two batches while the broker stays unavailable. */
  static final Duration MAX_PAUSE = Duration.ofSeconds(30);
  static final Duration WARN_EVERY = Duration.ofSeconds(30);

  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);

  private final String worker;
  private final Backoff backoff;
  /** {@code null}: the publisher offers none, and a wait is the whole backoff. */
  private final BrokerProbe probe;
  private int batches;
  private long events;
  private long sinceNanos;
  private long warnedNanos;
  private boolean stalled;

  BrokerOutage(String worker, Duration initial, Duration max, BrokerProbe probe) {
    this.worker = worker;
    this.probe = probe;
    Duration cap = max.compareTo(MAX_PAUSE) < 0 ? max : MAX_PAUSE;
    this.backoff = new Backoff(initial, initial.compareTo(cap) > 0 ? initial : cap);
  }

  /**
   * Records one batch's outcome.
   *
   * @param unavailable events of the batch the broker could not take (released, no attempt counted)
   * @param published events the broker acknowledged
   * @param cause the first unavailable failure of the batch, or {@code null}
   */
  void record(int unavailable, int published, Exception cause) {
    long now = System.nanoTime();
    if (unavailable == 0) {
      if (batches > 0 && published > 0) {
        LOG.info("{}: the broker takes events again after {} ({} events waited without counting an attempt)",
            worker, Duration.ofNanos(now - sinceNanos), events);
        batches = 0;
        events = 0;
      }
      stalled = false;
      return;
    }
    stalled = published == 0;
    if (batches++ == 0) {
      sinceNanos = now;
      warnedNanos = now;
      events = unavailable;
      LOG.warn("{}: broker unavailable for {} events, released without counting an attempt; retrying with"
          + " backoff. Cause: {}", worker, unavailable, ErrorText.of(cause));
      return;
    }
    events += unavailable;
    if (now - warnedNanos >= WARN_EVERY.toNanos()) {
      warnedNanos = now;
      LOG.warn("{}: broker still unavailable after {}: {} batches and {} events released so far. Last cause: {}",
          worker, Duration.ofNanos(now - sinceNanos), batches, events, ErrorText.of(cause));
    } else {
      LOG.debug("{}: broker still unavailable for {} events: {}", worker, unavailable, ErrorText.of(cause));
    }
  }

  /**
   * How long to wait before the next batch: {@code null} unless the last batch published nothing because
   * the broker was unavailable; then the wait doubles per such batch (with jitter) up to {@link #MAX_PAUSE}.
   */
  Duration pause() {
    return stalled ? backoff.delay(batches) : null;
  }

  /**
   * Waits {@link #pause()}, unless {@code stop} holds. With a probe, asks it every {@link BrokerProbe#EVERY}
   * and returns as soon as it answers ready after having answered not ready during this wait: the broker came
   * back. A probe that answers ready from the start (the connection is up, the broker still refuses) cuts
   * nothing short, so the backoff still protects a broker that stays down.
   */
  void waitOut(Waiter waiter, BooleanSupplier stop) throws InterruptedException {
    Duration pause = pause();
    if (pause == null) {
      return;
    }
    if (probe == null) {
      waiter.sleep(pause, stop);
      return;
    }
    long deadline = System.nanoTime() + pause.toNanos();
    boolean sawDown = false;
    while (!stop.getAsBoolean()) {
      if (!ready()) {
        sawDown = true;
      } else if (sawDown) {
        LOG.debug("{}: the publisher's probe says the broker is back; the wait ends early", worker);
        return;
      }
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        return;
      }
      waiter.sleep(Duration.ofNanos(Math.min(left, BrokerProbe.EVERY.toNanos())), stop);
      if (System.nanoTime() >= deadline) {
        return;
      }
    }
  }

  private boolean ready() throws InterruptedException {
    try {
      return probe.ready();
    } catch (InterruptedException e) {
      throw e;
    } catch (Exception e) {
      LOG.debug("{}: the publisher's probe failed: {}", worker, ErrorText.of(e));
      return false;
    }
  }
}
