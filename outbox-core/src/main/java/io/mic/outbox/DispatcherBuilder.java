package io.mic.outbox;

import java.time.Duration;

/**
 * Options shared by {@link OutboxDispatcher.Builder} and {@link AsyncOutboxDispatcher.Builder}. Defaults
 * are the {@code DEFAULT_*} constants of {@link OutboxDispatcher}; {@code build()} checks every option
 * and names the one that is wrong.
 */
public abstract class DispatcherBuilder<B extends DispatcherBuilder<B>> {
  OutboxStore store;
  DispatchFn dispatchFn;
  boolean useClaim;
  Duration leaseTtl = OutboxDispatcher.DEFAULT_LEASE_TTL;
  boolean preserveAggregateOrder;
  boolean holdAggregateOnDeadLetter;
  int batchSize = OutboxDispatcher.DEFAULT_BATCH_SIZE;
  int aggregateRun = OutboxDispatcher.DEFAULT_AGGREGATE_RUN;
  int maxAttempts = OutboxDispatcher.DEFAULT_MAX_ATTEMPTS;
  Duration retryInitial = OutboxDispatcher.DEFAULT_RETRY_INITIAL;
  Duration retryMax = OutboxDispatcher.DEFAULT_RETRY_MAX;
  OutboxListener listener = OutboxListener.NONE;
  String name = OutboxDispatcher.DEFAULT_NAME;

  DispatcherBuilder() {}

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }

  /** Required: where the events are read and marked. */
  public B store(OutboxStore store) {
    this.store = store;
    return self();
  }

  /** Required: publishes one event; see {@link DispatchFn} for how to report failures. */
  public B dispatchFn(DispatchFn dispatchFn) {
    this.dispatchFn = dispatchFn;
    return self();
  }

  /**
   * Claim events under a lease before publishing them (default {@code false}). Needed for more than one
   * dispatcher on the same store: claims are disjoint, and a dead worker's events are taken over when
   * its lease expires.
   */
  public B useClaim(boolean useClaim) {
    this.useClaim = useClaim;
    return self();
  }

  /**
   * How long a claim holds its events (default 3 s). While a batch is being published its leases are
   * renewed every third of this time, however long a publication takes; the lease only runs out when the
   * worker's process dies or freezes, or the store stays unreachable. It is how long such a worker's events
   * wait before another worker takes them over. A longer lease tolerates longer freezes (GC pauses, a
   * database out of reach) without duplicates, and holds a dead process's events (in ordered mode, their
   * aggregates) that much longer; see docs/guarantees.md.
   */
  public B leaseTtl(Duration leaseTtl) {
    this.leaseTtl = leaseTtl;
    return self();
  }

  /**
   * Publish the events of each {@code (aggregateType, aggregateId)} one at a time, in
   * {@code (createdAt, id)} order (default {@code false}). A failing head blocks its aggregate until it
   * is dispatched or dead-lettered; other aggregates go on.
   */
  public B preserveAggregateOrder(boolean preserveAggregateOrder) {
    this.preserveAggregateOrder = preserveAggregateOrder;
    return self();
  }

  /**
   * In ordered mode, keep an aggregate waiting behind its dead event (default {@code false}: a dead event
   * releases its aggregate's next one, so a consumer sees a gap). Held, no later event of the aggregate is
   * published until an operator redrives the dead event, which then goes first, or purges it; other
   * aggregates go on. {@link OutboxStore#heldAggregates()} lists what waits. Needs
   * {@code preserveAggregateOrder(true)}.
   */
  public B holdAggregateOnDeadLetter(boolean hold) {
    this.holdAggregateOnDeadLetter = hold;
    return self();
  }

  /** Events read or claimed per round trip (default 100, at most {@value OutboxDispatcher#MAX_BATCH_SIZE}). */
  public B batchSize(int batchSize) {
    this.batchSize = batchSize;
    return self();
  }

  /**
   * In ordered claim mode, how many consecutive events of one aggregate a claim may take together
   * (default {@value OutboxDispatcher#DEFAULT_AGGREGATE_RUN}). A run is claimed atomically with its head
   * and published in order by one worker, so order is kept while a hot aggregate no longer costs one
   * round trip per event. The run stops at the first failure; the rest go back untried. 1 claims heads
   * only.
   */
  public B aggregateRun(int aggregateRun) {
    this.aggregateRun = aggregateRun;
    return self();
  }

  /** Attempts before an event goes to the DLQ (default 10). */
  public B maxAttempts(int maxAttempts) {
    this.maxAttempts = maxAttempts;
    return self();
  }

  /**
   * The first retry waits about {@code initial} (±20 % jitter), each further one twice as long, never
   * more than {@code max} (defaults 1 s and 5 min).
   */
  public B retryBackoff(Duration initial, Duration max) {
    this.retryInitial = initial;
    this.retryMax = max;
    return self();
  }

  /** Receives dispatched, retried, dead-lettered, lease-lost and batch events (default none). */
  public B listener(OutboxListener listener) {
    this.listener = listener;
    return self();
  }

  /** Prefix of thread names and lease owners (default {@code mic-outbox}), to tell dispatchers apart. */
  public B name(String name) {
    this.name = name;
    return self();
  }

  void validate() {
    require(store != null, "store is required: .store(outboxStore)");
    require(dispatchFn != null, "dispatchFn is required: .dispatchFn(event -> publish(event))");
    require(leaseTtl != null && !leaseTtl.isNegative() && !leaseTtl.isZero(),
        "leaseTtl must be > 0, was " + leaseTtl);
    require(batchSize >= 1 && batchSize <= OutboxDispatcher.MAX_BATCH_SIZE,
        "batchSize must be between 1 and " + OutboxDispatcher.MAX_BATCH_SIZE + ", was " + batchSize);
    require(maxAttempts >= 1, "maxAttempts must be >= 1, was " + maxAttempts);
    require(aggregateRun >= 1, "aggregateRun must be >= 1, was " + aggregateRun);
    require(retryInitial != null && !retryInitial.isNegative() && !retryInitial.isZero(),
        "retryBackoff initial delay must be > 0, was " + retryInitial);
    require(retryMax != null && retryMax.compareTo(retryInitial) >= 0,
        "retryBackoff max delay must be >= the initial delay " + retryInitial + ", was " + retryMax);
    require(!holdAggregateOnDeadLetter || preserveAggregateOrder, "holdAggregateOnDeadLetter(true) holds an"
        + " aggregate's order, so it needs preserveAggregateOrder(true): set it, or leave holdAggregateOnDeadLetter unset");
    require(listener != null, "listener must not be null: leave it unset for none");
    require(name != null && name.matches("[A-Za-z0-9_.-]{1,40}"),
        "name must be 1 to 40 letters, digits, '_', '.' or '-', was " + name);
  }

  static void require(boolean condition, String message) {
    if (!condition) {
      throw new InvalidConfigurationException(message);
    }
  }

  Backoff backoff() {
    return new Backoff(retryInitial, retryMax);
  }
}
