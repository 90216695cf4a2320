package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Retention for a {@link JdbcOutboxStore}'s table: deletes {@code DISPATCHED} events once they are older
 * than a retention. {@code PENDING}, {@code PROCESSING} and {@code DLQ} rows are never touched (dead letters
 * stay until an operator redrives or purges them with {@link OutboxDeadLetters}).
 *
 * <pre>{@code
 * OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).build();
 * scheduler.scheduleWithFixedDelay(
 *     () -> maintenance.purgeDispatchedOlderThan(Duration.ofDays(7)), 1, 60, TimeUnit.MINUTES);
 * }</pre>
 *
 * <p>The age is {@code dispatched_at} against the database clock. Rows go in batches of {@code batchSize},
 * oldest first ({@link Dialect#retentionOrder()}), each one statement in its own short transaction, so
 * dispatchers and appends carry on meanwhile, and several instances may purge at once. Immutable and
 * thread-safe.
 */
public final class OutboxMaintenance {
  public static final int DEFAULT_BATCH_SIZE = 1_000;
  public static final int MAX_BATCH_SIZE = 10_000;

  private static final Logger LOG = LoggerFactory.getLogger(OutboxMaintenance.class);

  private final JdbcOutboxStore store;
  private final TableAccess access;
  private final RetentionStatements statements;
  private final EventQueries queries;
  private final int batchSize;

  private OutboxMaintenance(JdbcOutboxStore store, int batchSize) {
    this.store = store;
    this.access = store.access();
    this.statements = new RetentionStatements(access);
    this.queries = new EventQueries(access);
    this.batchSize = batchSize;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Deletes the {@code DISPATCHED} events dispatched more than {@code retention} ago ({@code Duration.ZERO}:
   * every one dispatched so far).
   *
   * @return how many were deleted
   */
  public long purgeDispatchedOlderThan(Duration retention) {
    return purgeDispatchedOlderThan(retention, total -> {});
  }

  /**
   * As {@link #purgeDispatchedOlderThan(Duration)}, telling {@code progress} the running total after each
   * batch, on the calling thread (e.g. for a progress line of a long purge).
   *
   * @return how many were deleted
   */
  public long purgeDispatchedOlderThan(Duration retention, LongConsumer progress) {
    Objects.requireNonNull(progress, "progress");
    long micros = TableAccess.retentionMicros(retention);
    long total = TableAccess.deleteInBatches(() -> purgeDispatchedBatch(micros), batchSize, progress);
    if (total > 0) {
      LOG.info("outbox table {}: purged {} event(s) dispatched more than {} ago", access.name, total, retention);
    }
    return total;
  }

  /**
   * Creates the partitions of a partitioned table ({@link JdbcOutboxStore.Builder#partitionInterval}) from the
   * current interval to {@value PostgresPartitions#AHEAD} ahead, when they are missing. Idempotent, and safe to
   * call from several processes at once; when every partition exists it runs no DDL. The dispatchers' reads call
   * it too, at most every quarter interval, so this is for a process that appends without dispatching.
   *
   * @return how many partitions were created
   * @throws io.mic.outbox.InvalidConfigurationException if the store's table is not partitioned
   */
  public int ensurePartitions() {
    return store.partitions("ensurePartitions()").ensure();
  }

  /**
   * Drops the partitions of a partitioned table whose rows were all created more than {@code retention} ago,
   * whole, unless one still holds a {@code PENDING}, {@code PROCESSING} or {@code DLQ} row (that one stays until
   * its events are dispatched, redriven or purged; purgeDispatchedOlderThan can still thin it). A partition
   * whose lock cannot be had within a moment, because a long transaction reads the table, is left for the next
   * call (logged at WARN).
   *
   * <pre>{@code
   * scheduler.scheduleWithFixedDelay(
   *     () -> maintenance.dropPartitionsOlderThan(Duration.ofDays(7)), 1, 60, TimeUnit.MINUTES);
   * }</pre>
   *
   * @return how many partitions were dropped
   * @throws io.mic.outbox.InvalidConfigurationException if the store's table is not partitioned
   */
  public int dropPartitionsOlderThan(Duration retention) {
    return store.partitions("dropPartitionsOlderThan(...)").dropOlderThan(retention);
  }

  /**
   * The store's {@link JdbcOutboxStore#oldestTransactionAge()}. While it grows, no purge, mark or claim leaves
   * garbage that can be reclaimed, and a queue table slows down with every dead row: alert on it
   * (docs/operations.md).
   */
  public Optional<Duration> oldestTransactionAge() {
    return store.oldestTransactionAge();
  }

  /**
   * The oldest live event ({@code PENDING} or {@code PROCESSING}, first by {@code (created_at, id)}): the
   * head of the queue, whose age is the lag; empty when none is live.
   */
  public Optional<OutboxEvent> oldestLiveEvent() {
    return queries.oldestLive();
  }

  /**
   * The events of {@code topic} created in {@code [from, to]} (both included), ids and states only: what
   * {@code mic-outbox reconcile} compares with a broker and an inbox. The whole range is read into memory.
   */
  public List<EventState> eventsCreatedBetween(String topic, Instant from, Instant to) {
    return queries.createdBetween(Objects.requireNonNull(topic, "topic"), Objects.requireNonNull(from, "from"),
        Objects.requireNonNull(to, "to"));
  }

  /**
   * One event of {@link #eventsCreatedBetween}.
   *
   * @param age since its {@code created_at}, by the database clock
   */
  public record EventState(UUID id, String aggregateId, OutboxStatus status, Duration age) {}

  /** One purge statement: at most {@code batchSize} rows. */
  int purgeDispatchedBatch(long retentionMicros) {
    return statements.purgeDispatched(retentionMicros, batchSize);
  }

  /** Builds an {@link OutboxMaintenance}; {@code store} is required. */
  public static final class Builder extends StoreToolBuilder<Builder, OutboxMaintenance> {
    private Builder() {
      super(DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE);
    }

    @Override
    OutboxMaintenance create(JdbcOutboxStore store, int batchSize) {
      return new OutboxMaintenance(store, batchSize);
    }
  }
}
