package io.mic.outbox;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

/**
 * A health summary operators can expose: how far behind the outbox is ({@code lag}), how much is waiting
 * ({@code pending}), how much is dead-lettered ({@code dlq}) and how many aggregates wait behind a dead
 * event ({@code heldAggregates}), when an event last went out, and how long the
 * database's oldest open transaction has been holding back the cleanup of the outbox's dead rows.
 *
 * <p>Register it as the dispatcher's listener so it sees successful dispatches; {@link #snapshot()} then
 * reads the store and combines both. Thread-safe: one instance can listen to several dispatchers.
 *
 * <pre>{@code
 * OutboxHealth health = OutboxHealth.builder().store(store).build();
 * AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder()
 *     .store(store).dispatchFn(publish).listener(health).build();
 * // in a health endpoint:
 * OutboxHealth.Snapshot s = health.snapshot();
 * int status = s.isHealthy(Duration.ofMinutes(5)) ? 200 : 503;
 * }</pre>
 *
 * <p>{@code snapshot()} asks the store four times ({@link OutboxStore#countByStatus()},
 * {@link OutboxStore#oldestPendingAge()}, {@link OutboxStore#oldestTransactionAge()} and
 * {@link OutboxStore#heldAggregates()}), once each, and nothing is cached: on a SQL store that is four queries
 * per call, so poll it every few seconds, not in a
 * tight loop. A store that cannot be read makes {@code snapshot()} throw its exception, which a health
 * endpoint reports as unhealthy.
 */
public final class OutboxHealth implements OutboxListener {
  private final OutboxStore store;
  private final Clock clock;
  private final AtomicReference<Instant> lastSuccessfulDispatch = new AtomicReference<>();
  private final LongAdder dispatched = new LongAdder();
  private final LongAdder retried = new LongAdder();
  private final LongAdder deadLettered = new LongAdder();
  private final LongAdder leaseLost = new LongAdder();
  private final LongAdder pollFailures = new LongAdder();

  private OutboxHealth(Builder b) {
    this.store = b.store;
    this.clock = b.clock;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** @throws RuntimeException whatever the store throws when it cannot be read */
  public Snapshot snapshot() {
    Map<OutboxStatus, Long> counts = store.countByStatus();
    Optional<Duration> lag = store.oldestPendingAge();
    Optional<Duration> oldestTransactionAge = store.oldestTransactionAge();
    long held = store.heldAggregates().size();
    return new Snapshot(clock.instant(), lag, oldestTransactionAge,
        count(counts, OutboxStatus.PENDING) + count(counts, OutboxStatus.PROCESSING),
        count(counts, OutboxStatus.DLQ), held, Optional.ofNullable(lastSuccessfulDispatch.get()),
        dispatched.sum(), retried.sum(), deadLettered.sum(), leaseLost.sum(), pollFailures.sum());
  }

  private static long count(Map<OutboxStatus, Long> counts, OutboxStatus status) {
    // the store contract promises every status, but a user's store that forgets one must not break health
    Long n = counts.get(status);
    return n == null ? 0 : n;
  }

  @Override
  public void onDispatched(OutboxEvent event, Duration publishTime) {
    dispatched.increment();
    // several workers report concurrently: keep the latest instant, whichever thread arrives last
    lastSuccessfulDispatch.accumulateAndGet(clock.instant(),
        (previous, now) -> previous == null || now.isAfter(previous) ? now : previous);
  }

  @Override
  public void onRetryScheduled(OutboxEvent event, Duration delay, String error) {
    retried.increment();
  }

  @Override
  public void onDeadLettered(OutboxEvent event, String error) {
    deadLettered.increment();
  }

  @Override
  public void onLeaseLost(OutboxEvent event) {
    leaseLost.increment();
  }

  @Override
  public void onPollFailed(Throwable error) {
    pollFailures.increment();
  }

  /**
   * The outbox at one moment. {@code lag}, {@code oldestTransactionAge}, {@code pending} and {@code dlq}
   * come from the store (shared by every dispatcher on it); the counters are what the dispatchers this
   * listener is registered with did since it was created.
   *
   * @param takenAt when the snapshot was taken, by the health's clock
   * @param lag age of the oldest {@code PENDING} or {@code PROCESSING} event (retry-waiting ones included);
   *     empty when nothing is waiting
   * @param oldestTransactionAge {@link OutboxStore#oldestTransactionAge()}: how long the database's oldest
   *     open transaction has been holding back the cleanup of dead rows; empty when none is open or the
   *     store cannot tell (always, in memory). It does not enter {@link #isHealthy(Duration)}: alert on it
   *     separately
   * @param pending events {@code PENDING} or {@code PROCESSING}
   * @param dlq events in the {@code DLQ} now, waiting for an operator's redrive or purge
   * @param heldAggregates aggregates whose later events wait behind a dead event
   *     ({@link OutboxStore#heldAggregates()}); they wait for an operator, like {@code dlq}
   * @param lastSuccessfulDispatch when a dispatcher this listener sees last marked an event dispatched;
   *     empty if none has since start
   * @param dispatched events dispatched since start
   * @param retried retries scheduled since start
   * @param deadLettered events moved to the DLQ since start
   * @param leaseLost marks that found their lease taken over since start
   * @param pollFailures polls that failed since start (e.g. database unreachable)
   */
  public record Snapshot(Instant takenAt, Optional<Duration> lag, Optional<Duration> oldestTransactionAge,
      long pending, long dlq, long heldAggregates, Optional<Instant> lastSuccessfulDispatch, long dispatched, long retried,
      long deadLettered, long leaseLost, long pollFailures) {

    public Snapshot {
      Objects.requireNonNull(takenAt, "takenAt");
      Objects.requireNonNull(lag, "lag");
      Objects.requireNonNull(oldestTransactionAge, "oldestTransactionAge");
      Objects.requireNonNull(lastSuccessfulDispatch, "lastSuccessfulDispatch");
    }

    /**
     * {@code true} while the oldest waiting event is no older than {@code maxLag} (or nothing waits).
     * Dead letters and held aggregates do not make the outbox unhealthy, since dispatch goes on around
     * them: alert on {@link #dlq()} and {@link #heldAggregates()} separately.
     */
    public boolean isHealthy(Duration maxLag) {
      if (maxLag == null || maxLag.isNegative()) {
        throw new IllegalArgumentException("maxLag must be >= 0, was " + maxLag);
      }
      return lag.map(l -> l.compareTo(maxLag) <= 0).orElse(true);
    }

    /** Time since the last successful dispatch, as of {@link #takenAt()}; empty if there was none. */
    public Optional<Duration> sinceLastDispatch() {
      return lastSuccessfulDispatch.map(last -> Duration.between(last, takenAt));
    }
  }

  /** Builds an {@link OutboxHealth}: {@code store} is required, {@code clock} defaults to UTC system time. */
  public static final class Builder {
    private OutboxStore store;
    private Clock clock = Clock.systemUTC();

    private Builder() {}

    /** Required: the store whose lag and counts are reported. */
    public Builder store(OutboxStore store) {
      this.store = store;
      return this;
    }

    /** Stamps {@code lastSuccessfulDispatch} and {@code takenAt} (default {@link Clock#systemUTC()}). */
    public Builder clock(Clock clock) {
      this.clock = clock;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public OutboxHealth build() {
      if (store == null) {
        throw new InvalidConfigurationException("store is required: .store(outboxStore)");
      }
      if (clock == null) {
        throw new InvalidConfigurationException("clock must not be null: leave it unset for the system clock");
      }
      return new OutboxHealth(this);
    }
  }
}
