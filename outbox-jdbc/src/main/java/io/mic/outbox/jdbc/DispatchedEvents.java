package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.UUID;

/**
 * Reads and deletes the {@code DISPATCHED} rows of a {@link JdbcOutboxStore}'s table: the seam for an exporter
 * of one's own (a data lake, an audit store), on which {@code OutboxArchiver} is built. Each call is one short
 * transaction; a delete touches only rows still {@code DISPATCHED}. Immutable and thread-safe.
 *
 * <pre>{@code
 * DispatchedEvents rows = DispatchedEvents.of(store);
 * List<OutboxEvent> page = rows.oldest(Duration.ofDays(7), 1_000);   // oldest first
 * exporter.writeDurably(page);
 * rows.delete(page.stream().map(OutboxEvent::id).toList());
 * }</pre>
 */
public final class DispatchedEvents {
  /** The most ids one delete statement binds. */
  public static final int MAX_PAGE = 10_000;

  private final TableAccess access;
  private final RetentionStatements statements;

  private DispatchedEvents(TableAccess access) {
    this.access = access;
    this.statements = new RetentionStatements(access);
  }

  /** The dispatched rows of {@code store}'s table. */
  public static DispatchedEvents of(JdbcOutboxStore store) {
    if (store == null) {
      throw new InvalidConfigurationException("store is required: .store(jdbcOutboxStore)");
    }
    return new DispatchedEvents(store.access());
  }

  /** The table, as configured on the store. */
  public String table() {
    return access.name.toString();
  }

  /**
   * At most {@code limit} {@code DISPATCHED} events whose {@code dispatched_at} is more than
   * {@code olderThan} before the database clock ({@code Duration.ZERO}: dispatched up to now), in
   * {@link Dialect#retentionOrder()}: oldest dispatch first (then by id), or on PostgreSQL, whose lean
   * schema has no index on {@code dispatched_at}, by id (creation order for the default UUIDv7 ids).
   */
  public List<OutboxEvent> oldest(Duration olderThan, int limit) {
    long micros = TableAccess.retentionMicros(olderThan);
    if (limit < 1 || limit > MAX_PAGE) {
      throw new InvalidConfigurationException("limit must be between 1 and " + MAX_PAGE + ", was " + limit);
    }
    return statements.oldestDispatched(micros, limit);
  }

  /**
   * Deletes the events with these ids that are still {@code DISPATCHED} (a row in any other state is
   * never touched), in one transaction.
   *
   * @return how many rows were deleted
   */
  public int delete(Collection<UUID> ids) {
    Objects.requireNonNull(ids, "ids");
    if (ids.isEmpty()) {
      return 0;
    }
    if (ids.size() > MAX_PAGE) {
      throw new InvalidConfigurationException("at most " + MAX_PAGE + " ids per delete, was " + ids.size());
    }
    return statements.deleteDispatched(new ArrayList<>(ids));
  }
}
