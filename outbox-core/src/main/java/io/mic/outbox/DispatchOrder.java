package io.mic.outbox;

import io.mic.outbox.internal.UuidV7;
import java.util.Comparator;
import java.util.UUID;

/**
 * The orders of {@link OutboxStore}'s rules, for stores of one's own and their tests: available events come
 * by {@code priority} (higher first), then {@code createdAt}, then {@code id} as unsigned bytes; within an
 * aggregate by {@code createdAt}, then {@code id}.
 *
 * <pre>{@code
 * List<OutboxEvent> claimed = new ArrayList<>(rowsReturnedByTheDatabase);
 * claimed.sort(DispatchOrder.EVENTS);
 * }</pre>
 */
public final class DispatchOrder {
  /**
   * Event ids as unsigned bytes, the way PostgreSQL and RFC 9562 compare UUIDs ({@link UUID#compareTo}
   * compares signed longs, which puts half of all ids in another order).
   */
  public static final Comparator<UUID> IDS = UuidV7.ORDER;

  /** Within one aggregate: {@code createdAt}, then {@link #IDS}. */
  public static final Comparator<OutboxEvent> WITHIN_AGGREGATE = Comparator
      .comparing(OutboxEvent::createdAt).thenComparing(OutboxEvent::id, IDS);

  /** Across the outbox: {@code priority}, higher first, then {@link #WITHIN_AGGREGATE}. */
  public static final Comparator<OutboxEvent> EVENTS = Comparator
      .comparingInt(OutboxEvent::priority).reversed() // not -priority: that overflows at Integer.MIN_VALUE
      .thenComparing(WITHIN_AGGREGATE);

  private DispatchOrder() {}
}
