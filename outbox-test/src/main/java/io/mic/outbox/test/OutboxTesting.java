package io.mic.outbox.test;

import io.mic.outbox.DispatchResult;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * Waiting and dispatching in tests, with failure messages that say what is still pending.
 *
 * <pre>{@code
 * OutboxTesting.dispatchUntilEmpty(dispatcher);                         // synchronous, on this thread
 * OutboxTesting.awaitDispatched(store, Duration.ofSeconds(5), event.id()); // a running AsyncOutboxDispatcher
 * OutboxTesting.awaitDrained(store, Duration.ofSeconds(5));             // nothing PENDING or PROCESSING
 * }</pre>
 *
 * <p>Every wait polls the store every {@value #POLL_MILLIS} ms and throws an {@link AssertionError} when
 * the time is up, which every test framework reports as a failure.
 */
public final class OutboxTesting {
  /** How often the waits read the store, in milliseconds. */
  public static final int POLL_MILLIS = 10;
  /** How many pending events a failure message lists. */
  static final int LISTED = 10;

  private OutboxTesting() {}

  /**
   * Calls {@link OutboxDispatcher#dispatchOnce()} until a call finds nothing due, on the calling thread.
   * Events waiting for a retry (after a failure or a broker outage) are not due yet and stay pending: see
   * {@link #awaitDrained} for waiting on them with a running dispatcher.
   *
   * @return the sum of every batch's counts
   * @throws AssertionError when the outbox is still not empty after {@code 10 000} batches (a publisher
   *     that keeps appending events, for instance)
   */
  public static DispatchResult dispatchUntilEmpty(OutboxDispatcher dispatcher) {
    DispatchResult total = DispatchResult.EMPTY;
    for (int batch = 0; batch < 10_000; batch++) {
      DispatchResult r = dispatcher.dispatchOnce();
      if (r.isEmpty()) {
        return total;
      }
      total = new DispatchResult(total.fetched() + r.fetched(), total.dispatched() + r.dispatched(),
          total.retried() + r.retried(), total.deadLettered() + r.deadLettered(),
          total.released() + r.released(), total.leaseLost() + r.leaseLost());
    }
    throw new AssertionError("the outbox still had due events after 10000 batches (" + total + "): does"
        + " the publisher append new events?");
  }

  /**
   * Waits until no event is {@code PENDING} or {@code PROCESSING}: every event is {@code DISPATCHED} or in
   * the {@code DLQ}.
   *
   * @throws AssertionError after {@code timeout}, with the counts by status and the first pending events
   *     that are due (id, topic, aggregate, attempts, last error)
   */
  public static void awaitDrained(OutboxStore store, Duration timeout) throws InterruptedException {
    long deadline = deadline(timeout);
    while (true) {
      Map<OutboxStatus, Long> counts = store.countByStatus();
      if (counts.get(OutboxStatus.PENDING) == 0 && counts.get(OutboxStatus.PROCESSING) == 0) {
        return;
      }
      if (System.nanoTime() >= deadline) {
        List<OutboxEvent> due = store.fetchPending(LISTED, false);
        throw new AssertionError("the outbox is not drained after " + timeout + ": " + counts(counts)
            + (due.isEmpty() ? "; none is due now (waiting for a retry or under a lease)"
                : "; due now: " + describe(due)));
      }
      Thread.sleep(POLL_MILLIS);
    }
  }

  /**
   * Waits until every one of these events is in the {@code DLQ}, e.g. behind a publisher that always fails
   * ({@code FaultyPublisher.failingTimes(1_000, …)}) and a small {@code maxAttempts}. An event that is
   * dispatched fails the wait at once: it will never be dead-lettered.
   *
   * @return the events as stored, in the order of {@code ids}, each with its attempts and last error
   * @throws AssertionError after {@code timeout}, or at once for a dispatched event or an unknown id, listing
   *     each event that is not dead-lettered with its status, attempts and last error
   */
  public static List<OutboxEvent> awaitDeadLettered(OutboxStore store, Duration timeout, UUID... ids)
      throws InterruptedException {
    return await(store, timeout, OutboxStatus.DLQ, ids);
  }

  /**
   * Waits until every one of these events is {@code DISPATCHED}. An event that reaches the {@code DLQ}
   * fails the wait at once: it will not be dispatched without an operator's redrive. On a store that deletes
   * a row at its mark ({@code JdbcOutboxStore.builder().deleteOnDispatch(true)}) an event no longer found was
   * dispatched; such a store keeps no trace that tells it from an event whose append was never committed.
   *
   * @return the events as stored, in the order of {@code ids} (on a store that deletes dispatched rows, those
   *     still found)
   * @throws AssertionError after {@code timeout}, or at once for a dead letter or an unknown id, listing
   *     each event that is not dispatched with its status, attempts and last error
   */
  public static List<OutboxEvent> awaitDispatched(OutboxStore store, Duration timeout, UUID... ids)
      throws InterruptedException {
    return await(store, timeout, OutboxStatus.DISPATCHED, ids);
  }

  /**
   * Waits until every event is in {@code end} ({@code DISPATCHED} or {@code DLQ}); fails at once when one is in
   * the other end, which it cannot leave by itself, or is unknown (on a store that deletes dispatched rows an
   * event not found was dispatched).
   */
  private static List<OutboxEvent> await(OutboxStore store, Duration timeout, OutboxStatus end, UUID... ids)
      throws InterruptedException {
    if (ids.length == 0) {
      throw new IllegalArgumentException("no event ids given: pass the ids of the events to wait for");
    }
    long deadline = deadline(timeout);
    boolean goneIsDispatched = end == OutboxStatus.DISPATCHED && store instanceof JdbcOutboxStore jdbc
        && jdbc.deletesOnDispatch();
    String ended = end == OutboxStatus.DLQ ? "dead-lettered" : "dispatched";
    while (true) {
      List<OutboxEvent> found = new ArrayList<>();
      List<OutboxEvent> waiting = new ArrayList<>();
      List<OutboxEvent> otherEnd = new ArrayList<>();
      List<UUID> missing = new ArrayList<>();
      for (UUID id : ids) {
        OutboxEvent e = store.find(id).orElse(null);
        if (e == null) {
          if (!goneIsDispatched) {
            missing.add(id);
          }
        } else {
          found.add(e);
          if (e.status() != end) {
            (e.status() == OutboxStatus.DLQ || e.status() == OutboxStatus.DISPATCHED ? otherEnd : waiting).add(e);
          }
        }
      }
      if (!missing.isEmpty()) {
        throw new AssertionError("no such event in the outbox: " + missing
            + " (was the transaction that appended it committed?)");
      }
      if (!otherEnd.isEmpty()) {
        throw new AssertionError(end == OutboxStatus.DLQ
            ? "event " + otherEnd.get(0).id() + " was dispatched, so it will never be dead-lettered: "
                + describe(otherEnd)
            : otherEnd.size() + " of " + ids.length + " events went to the DLQ instead of being dispatched: "
                + describe(otherEnd));
      }
      if (waiting.isEmpty()) {
        return found;
      }
      if (System.nanoTime() >= deadline) {
        throw new AssertionError(waiting.size() + " of " + ids.length + " events not " + ended + " after "
            + timeout + ": " + describe(waiting) + "; outbox: " + counts(store.countByStatus()));
      }
      Thread.sleep(POLL_MILLIS);
    }
  }

  private static long deadline(Duration timeout) {
    if (timeout == null || timeout.isNegative()) {
      throw new IllegalArgumentException("timeout must be >= 0, was " + timeout);
    }
    return System.nanoTime() + timeout.toNanos();
  }

  private static String counts(Map<OutboxStatus, Long> counts) {
    return Arrays.stream(OutboxStatus.values()).map(s -> counts.getOrDefault(s, 0L) + " " + s).toList().toString();
  }

  /** Ids and state only: payloads may hold personal data. */
  static String describe(List<OutboxEvent> events) {
    String listed = events.stream().limit(LISTED).map(e -> e.id() + " (" + e.topic() + ", " + e.aggregateType() + "/"
        + e.aggregateId() + ", " + e.status() + ", attempts " + e.attempts()
        + (e.lastError() != null ? ", last error: " + e.lastError() : "") + ")").collect(Collectors.joining(", "));
    return events.size() > LISTED ? listed + " and " + (events.size() - LISTED) + " more" : listed;
  }
}
