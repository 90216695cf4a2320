package io.mic.outbox;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.ToIntFunction;

/**
 * The order in which events leave the outbox, in one place for every store and the dispatcher.
 *
 * <ul>
 *   <li><b>Within an aggregate</b>: arrival ({@code created_at}), then id. Priority never reorders an
 *       aggregate.</li>
 *   <li><b>Across aggregates</b>: priority (higher first), then arrival, then id.</li>
 *   <li><b>Waves</b>: a batch holding several events of one aggregate (a <i>run</i>) goes out in waves:
 *       the first event of every run, then the second of every run, and so on, so that an event is never
 *       published before the earlier events of its aggregate.</li>
 * </ul>
 *
 * <p>Ids compare as their bytes do ({@link #IDS}). A store of its own (see {@link OutboxStore}) returns
 * claimed events in this order:
 *
 * <pre>{@code
 * List<OutboxEvent> claimed = new ArrayList<>(rowsReturnedByTheDatabase);
 * claimed.sort(DispatchOrder.DISPATCH);
 * }</pre>
 */
public final class DispatchOrder {
  /**
   * Event ids as unsigned bytes, the way PostgreSQL and RFC 9562 compare UUIDs ({@link UUID#compareTo}
   * compares signed longs, which puts half of all ids in another order).
   */
  public static final Comparator<UUID> IDS = UuidV7.ORDER;

  /** Order within one aggregate: arrival, then id. */
  public static final Comparator<OutboxEvent> IN_AGGREGATE = inAggregate(OutboxEvent::createdAt, OutboxEvent::id);

  /** Dispatch order across aggregates: priority (higher first), then arrival, then id. */
  public static final Comparator<OutboxEvent> DISPATCH =
      dispatch(OutboxEvent::priority, OutboxEvent::createdAt, OutboxEvent::id);

  private DispatchOrder() {}

  /** {@link #IN_AGGREGATE} for a store's own row type. */
  public static <T> Comparator<T> inAggregate(Function<T, Instant> createdAt, Function<T, UUID> id) {
    return Comparator.comparing(createdAt).thenComparing(id, IDS);
  }

  /** {@link #DISPATCH} for a store's own row type. */
  public static <T> Comparator<T> dispatch(ToIntFunction<T> priority, Function<T, Instant> createdAt,
      Function<T, UUID> id) {
    return Comparator.comparingInt(priority).reversed() // not -priority: that overflows at Integer.MIN_VALUE
        .thenComparing(inAggregate(createdAt, id));
  }

  /**
   * The claimed events of several runs in wave order: each aggregate's events in arrival order, the runs
   * in the dispatch order of their first events, then {@link #interleave interleaved}.
   */
  public static List<OutboxEvent> inWaves(Collection<OutboxEvent> claimed) {
    Map<List<String>, List<OutboxEvent>> byAggregate = new LinkedHashMap<>();
    for (OutboxEvent e : claimed) {
      byAggregate.computeIfAbsent(aggregateOf(e), k -> new ArrayList<>()).add(e);
    }
    List<List<OutboxEvent>> runs = new ArrayList<>(byAggregate.values());
    runs.forEach(run -> run.sort(IN_AGGREGATE));
    runs.sort(Comparator.comparing(run -> run.get(0), DISPATCH));
    return interleave(runs, Integer.MAX_VALUE);
  }

  /**
   * The first element of every run, then the second of every run, and so on, up to {@code limit}
   * elements in all.
   */
  public static <T> List<T> interleave(List<? extends List<T>> runs, int limit) {
    List<T> result = new ArrayList<>();
    for (int position = 0; result.size() < limit; position++) {
      boolean any = false;
      for (List<T> run : runs) {
        if (position < run.size() && result.size() < limit) {
          result.add(run.get(position));
          any = true;
        }
      }
      if (!any) {
        break;
      }
    }
    return result;
  }

  /**
   * A batch in wave order cut into its waves: an event goes into wave <i>n</i> when it is the
   * <i>n</i>-th event of its aggregate in the batch. The events of one wave belong to distinct aggregates
   * and may be published together.
   */
  public static List<List<OutboxEvent>> waves(List<OutboxEvent> batch) {
    List<List<OutboxEvent>> waves = new ArrayList<>();
    Map<List<String>, Integer> positions = new LinkedHashMap<>();
    for (OutboxEvent event : batch) {
      int position = positions.merge(aggregateOf(event), 1, Integer::sum) - 1;
      while (waves.size() <= position) {
        waves.add(new ArrayList<>());
      }
      waves.get(position).add(event);
    }
    return waves;
  }

  /** The aggregate of an event as a map key: (type, id). */
  static List<String> aggregateOf(OutboxEvent event) {
    return List.of(event.aggregateType(), event.aggregateId());
  }
}
