package io.mic.outbox;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;

/**
 * What a dispatcher asks of {@link OutboxStore#claim(ClaimRequest)} in one poll: up to {@code limit} events
 * leased to {@code owner} for {@code leaseTtl}, in ordered mode each aggregate's head only, or its head with
 * up to {@code maxRun - 1} due events behind it (a <i>run</i>), skipping the events of {@code pausedTopics}.
 * In throughput mode a claim may go on {@code after} an event of the last claim instead of starting at the
 * first available event (see {@link #after(OutboxEvent)}).
 *
 * <pre>{@code
 * store.claim(ClaimRequest.of("worker-1#42", 500, Duration.ofSeconds(30)));                  // throughput mode
 * store.claim(ClaimRequest.of(owner, 500, ttl).inRuns(100).skipping(Set.of("billing.issued"))); // ordered, runs
 * }</pre>
 *
 * @param owner a token unique to this claim; it fences every later mark of the returned events
 * @param maxRun 1 for heads only; more claims runs (ordered mode only)
 * @param after {@code null}, or (throughput mode only) an event as a claim returned it: claim what follows it
 * @param holdOnDeadLetter (ordered mode only) an aggregate with a {@code DLQ} event has no head until its dead
 *     events are redriven or purged ({@link #holdingOnDeadLetter()})
 */
public record ClaimRequest(String owner, int limit, Duration leaseTtl, boolean ordered, int maxRun,
    Set<String> pausedTopics, OutboxEvent after, boolean holdOnDeadLetter) {

  public ClaimRequest {
    Objects.requireNonNull(owner, "owner");
    Objects.requireNonNull(leaseTtl, "leaseTtl");
    pausedTopics = Set.copyOf(Objects.requireNonNull(pausedTopics, "pausedTopics"));
    if (limit < 1) {
      throw new IllegalArgumentException("limit must be at least 1, was " + limit);
    }
    if (leaseTtl.isNegative() || leaseTtl.isZero()) {
      throw new IllegalArgumentException("leaseTtl must be positive, was " + leaseTtl);
    }
    if (maxRun < 1 || (!ordered && maxRun > 1)) {
      throw new IllegalArgumentException("maxRun must be 1, or more in ordered mode only, was " + maxRun
          + (ordered ? "" : " without ordering"));
    }
    if (after != null && ordered) {
      throw new IllegalArgumentException("after: a claim goes on after an event in throughput mode only; in"
          + " ordered mode it starts at the first head");
    }
    if (after != null && after.createdAt() == null) {
      throw new IllegalArgumentException("after: event " + after.id() + " has no arrival time; pass an event as a"
          + " claim returned it");
    }
    if (holdOnDeadLetter && !ordered) {
      throw new IllegalArgumentException("holdOnDeadLetter: an aggregate is held in ordered mode only");
    }
  }

  /** A request that does not hold aggregates behind their dead events. */
  public ClaimRequest(String owner, int limit, Duration leaseTtl, boolean ordered, int maxRun,
      Set<String> pausedTopics, OutboxEvent after) {
    this(owner, limit, leaseTtl, ordered, maxRun, pausedTopics, after, false);
  }

  /** A request that starts at the first available event. */
  public ClaimRequest(String owner, int limit, Duration leaseTtl, boolean ordered, int maxRun,
      Set<String> pausedTopics) {
    this(owner, limit, leaseTtl, ordered, maxRun, pausedTopics, null);
  }

  /** Throughput mode: any available events, no runs, nothing paused. */
  public static ClaimRequest of(String owner, int limit, Duration leaseTtl) {
    return new ClaimRequest(owner, limit, leaseTtl, false, 1, Set.of());
  }

  /** Ordered mode ({@code true}: each aggregate's head only) or throughput mode. */
  public ClaimRequest ordered(boolean ordered) {
    return new ClaimRequest(owner, limit, leaseTtl, ordered, ordered ? maxRun : 1, pausedTopics, after,
        ordered && holdOnDeadLetter);
  }

  /** Ordered mode with runs of up to {@code maxRun} events behind each head. */
  public ClaimRequest inRuns(int maxRun) {
    return new ClaimRequest(owner, limit, leaseTtl, true, maxRun, pausedTopics, after, holdOnDeadLetter);
  }

  /** The same request skipping the events of {@code topics}. */
  public ClaimRequest skipping(Set<String> topics) {
    return new ClaimRequest(owner, limit, leaseTtl, ordered, maxRun, topics, after, holdOnDeadLetter);
  }

  /**
   * Throughput mode: the same request, claiming only what follows {@code event} in dispatch order, the last
   * event of the previous claim, so that the claim does not step again over the events still leased (or
   * locked) ahead of it. What became available before that place meanwhile waits for a claim from the start,
   * which the caller makes regularly. A store may go on only within the event's priority, or ignore the
   * position; both are correct.
   */
  public ClaimRequest after(OutboxEvent event) {
    return new ClaimRequest(owner, limit, leaseTtl, ordered, maxRun, pausedTopics, event, holdOnDeadLetter);
  }

  /**
   * Ordered mode: the same request, in which a {@code DLQ} event holds its aggregate's events back (see
   * {@link HeldAggregate}).
   */
  public ClaimRequest holdingOnDeadLetter() {
    return new ClaimRequest(owner, limit, leaseTtl, true, maxRun, pausedTopics, after, true);
  }

  /** Whether heads carry runs behind them. */
  public boolean runs() {
    return maxRun > 1;
  }
}
