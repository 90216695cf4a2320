package io.mic.outbox.nats.internal;

import io.nats.client.api.PublishAck;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A bounded window of JetStream publications waiting for their PubAck, settled oldest first: the live
 * publisher's batches and a replay's publish through it (both by {@code JetStreamChannel}).
 * Every wait is bounded by the ack timeout, counted from the publication: no PubAck in time fails it with a
 * {@link TimeoutException}. The deadline is checked when the publication is settled, not by a timer per
 * publication (a timer task each, scheduled and cancelled on a shared scheduler, cost more CPU than the
 * window's own work). One window per batch, or per channel of batches, on one thread.
 *
 * <pre>{@code
 * PubAckWindow<OutboxEvent> window = new PubAckWindow<>(256, Duration.ofSeconds(5), outcomes);
 * for (OutboxEvent e : events) {
 *   window.makeRoom();                                   // waits for the oldest PubAck when 256 are out
 *   window.add(e, jetStream.publishAsync(subject, headers, payload));
 * }
 * window.drain();                                        // every outcome reported, in sending order
 * }</pre>
 *
 * @param <K> what identifies a publication to its {@link Outcomes}
 */
public final class PubAckWindow<K> {
  private final ArrayDeque<InFlight<K>> inFlight = new ArrayDeque<>();
  private final int maxPending;
  private final Duration ackTimeout;
  private final Outcomes<K> outcomes;

  /** Where each publication's outcome goes, in the order the publications were added. */
  public interface Outcomes<K> {
    void acknowledged(K key, PublishAck ack);

    /**
     * @param cause why: what JetStream answered, a {@link TimeoutException} when no PubAck
     *     came within the ack timeout, or the client's error (unwrapped from the client's plain
     *     {@code RuntimeException} wrappers)
     */
    void failed(K key, Throwable cause);
  }

  /** A publication, its PubAck, and the {@link System#nanoTime()} by which the PubAck must have come. */
  private record InFlight<K>(K key, CompletableFuture<PublishAck> ack, long deadline) {}

  public PubAckWindow(int maxPending, Duration ackTimeout, Outcomes<K> outcomes) {
    this.maxPending = maxPending;
    this.ackTimeout = ackTimeout;
    this.outcomes = outcomes;
  }

  /** Waits for the oldest PubAck when {@code maxPending} publications wait already, so one more may be added. */
  public void makeRoom() throws InterruptedException {
    if (inFlight.size() >= maxPending) {
      settleOldest();
    }
  }

  /** Adds a publication just sent; its PubAck is awaited until the ack timeout from now has passed. */
  public void add(K key, CompletableFuture<PublishAck> ack) {
    inFlight.add(new InFlight<>(key, ack, System.nanoTime() + ackTimeout.toNanos()));
  }

  /** Waits for every publication still in the window, oldest first. */
  public void drain() throws InterruptedException {
    while (!inFlight.isEmpty()) {
      settleOldest();
    }
  }

  /**
   * Waits for the oldest publication's PubAck (or its failure) and reports it; a channel that sends its next
   * batch before the last one is settled settles that one this way, up to its last publication. Interrupted,
   * the publication stays in the window, unreported.
   */
  public void settleOldest() throws InterruptedException {
    InFlight<K> f = inFlight.peek();
    if (f == null) {
      return;
    }
    PublishAck ack;
    Throwable failure = null;
    try {
      ack = f.ack.get(Math.max(0, f.deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      ack = null;
      failure = new TimeoutException("no PubAck within " + ackTimeout.toMillis() + " ms");
    } catch (ExecutionException e) {
      ack = null;
      failure = e.getCause();
      while (failure.getClass() == RuntimeException.class && failure.getCause() != null) {
        failure = failure.getCause(); // the client wraps its checked exceptions
      }
    }
    inFlight.poll();
    if (failure != null) {
      outcomes.failed(f.key, failure);
    } else {
      outcomes.acknowledged(f.key, ack);
    }
  }

  public boolean isEmpty() {
    return inFlight.isEmpty();
  }
}
