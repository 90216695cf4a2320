package io.mic.outbox.jdbc;

import io.mic.outbox.ClaimRequest;
import io.mic.outbox.DispatchOrder;
import io.mic.outbox.OutboxEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * What a read of dispatchable events asks for, one value for every form of it: {@code owner} is
 * {@code null} for a read without a claim ({@code fetchPending}); {@code runLength} above 1 claims runs
 * behind ordered heads; {@code pausedTopics} are the caller's own pauses; {@code honourControl} also skips
 * what the outbox's control table pauses when the read starts (false once the table has been read into
 * {@code pausedTopics}, or while it is unusable); {@code inFlight} are events a read without a claim
 * leaves out because its caller is still publishing them, or a claim held by a transaction because its
 * store's other batches hold them; {@code after}, when not {@code null}, is where a read or claim in
 * throughput mode goes on from ({@code fetchPendingAfter}, {@code ClaimRequest.after}); {@code hold}, in
 * ordered mode, leaves out the aggregates that have a {@code DLQ} event.
 */
record ReadRequest(String owner, int limit, Duration leaseTtl, boolean ordered, int runLength,
    List<String> pausedTopics, boolean honourControl, List<UUID> inFlight, OutboxEvent after, boolean hold) {

  ReadRequest {
    pausedTopics = List.copyOf(pausedTopics);
    inFlight = List.copyOf(inFlight);
  }

  static ReadRequest fetch(int limit, boolean ordered, Set<String> pausedTopics, Set<UUID> inFlight) {
    return fetch(limit, ordered, pausedTopics, inFlight, false);
  }

  static ReadRequest fetch(int limit, boolean ordered, Set<String> pausedTopics, Set<UUID> inFlight, boolean hold) {
    return new ReadRequest(null, limit, null, ordered, 1, List.copyOf(pausedTopics), true, List.copyOf(inFlight),
        null, hold);
  }

  /** A read in throughput mode going on after {@code after}, within its priority. */
  static ReadRequest fetchAfter(OutboxEvent after, int limit, Set<String> pausedTopics, Set<UUID> inFlight) {
    return new ReadRequest(null, limit, null, false, 1, List.copyOf(pausedTopics), true, List.copyOf(inFlight),
        after, false);
  }

  static ReadRequest claim(ClaimRequest r) {
    return new ReadRequest(r.owner(), r.limit(), r.leaseTtl(), r.ordered(), r.maxRun(), List.copyOf(r.pausedTopics()),
        true, List.of(), r.after(), r.holdOnDeadLetter());
  }

  ReadRequest leavingOut(List<UUID> events) {
    return new ReadRequest(owner, limit, leaseTtl, ordered, runLength, pausedTopics, honourControl, events, after, hold);
  }

  ReadRequest withoutControl() {
    return withoutControl(pausedTopics);
  }

  /** The same request skipping {@code topics}, the control table read already. */
  ReadRequest withoutControl(List<String> topics) {
    return new ReadRequest(owner, limit, leaseTtl, ordered, runLength, topics, false, inFlight, after, hold);
  }

  /** Whether heads carry runs behind them. */
  boolean runs() {
    return ordered && runLength > 1;
  }

  /**
   * {@code claimed} in the order a dispatcher publishes them: in waves when heads carry runs, else in
   * {@link DispatchOrder#DISPATCH} (neither {@code RETURNING} nor {@code IN (...)} keeps an order).
   */
  List<OutboxEvent> inDispatchOrder(List<OutboxEvent> claimed) {
    if (runs()) {
      return DispatchOrder.inWaves(claimed);
    }
    List<OutboxEvent> sorted = new ArrayList<>(claimed);
    sorted.sort(DispatchOrder.DISPATCH);
    return sorted;
  }

  long leaseMicros() {
    return leaseTtl.toNanos() / 1_000;
  }
}
