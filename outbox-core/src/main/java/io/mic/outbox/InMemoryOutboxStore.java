package io.mic.outbox;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.BiConsumer;
import java.util.stream.Collectors;

/**
 * A real, thread-safe {@link OutboxStore} in memory: for tests, demos and as the reference behaviour every
 * SQL store is checked against. Nothing survives the JVM, so it offers no durability guarantee.
 *
 * <pre>{@code
 * InMemoryOutboxStore store = new InMemoryOutboxStore();
 * store.append(event);
 * OutboxDispatcher.builder().store(store).dispatchFn(publish).build().dispatchOnce();
 * }</pre>
 *
 * <p>Times come from the {@link Clock} given to the constructor, truncated to microseconds like a SQL
 * timestamp, so tests can move time forward. Appends within one microsecond get arrival times a
 * microsecond apart, so that arrival order is append order whatever the events' ids.
 */
public final class InMemoryOutboxStore implements OutboxStore, OutboxAppender {

  private static final Comparator<Row> DISPATCH_ORDER =
      DispatchOrder.dispatch(r -> r.event.priority(), r -> r.createdAt, r -> r.event.id());
  private static final Comparator<Row> AGGREGATE_ORDER = DispatchOrder.inAggregate(r -> r.createdAt, r -> r.event.id());

  private final Clock clock;
  private final Map<UUID, Row> rows = new HashMap<>();
  private final TreeSet<Row> open = new TreeSet<>(DISPATCH_ORDER);
  private final Map<List<String>, TreeSet<Row>> openByAggregate = new HashMap<>();
  /** The {@code DLQ} rows of each aggregate that has any, which hold its later events when asked to. */
  private final Map<List<String>, TreeSet<Row>> deadByAggregate = new HashMap<>();
  private final Map<List<String>, Long> sequences = new HashMap<>();
  /** The latest arrival time given: each append gets a later one, so arrival order is append order. */
  private Instant lastCreatedAt = Instant.MIN;
  private volatile PauseState pauseState = PauseState.NONE;

  public InMemoryOutboxStore() {
    this(Clock.systemUTC());
  }

  public InMemoryOutboxStore(Clock clock) {
    this.clock = Objects.requireNonNull(clock, "clock");
  }

  /**
   * Sets the pauses every dispatcher of this store honours, as a database's {@code outbox_control} table
   * does for SQL stores; {@link PauseState#NONE} lifts them.
   */
  public void pauseState(PauseState state) {
    this.pauseState = Objects.requireNonNull(state, "state");
  }

  @Override
  public PauseState pauseState() {
    return pauseState;
  }

  /** Stores a new {@code PENDING} event stamped with the store's clock and its aggregate's next sequence. */
  @Override
  public synchronized void append(OutboxEvent event) {
    Objects.requireNonNull(event, "event");
    if (rows.containsKey(event.id())) {
      throw new DuplicateEventException(event.id());
    }
    Instant now = now();
    // appends within one microsecond would tie, and ties sort by id, which need not follow append order
    lastCreatedAt = now.isAfter(lastCreatedAt) ? now : lastCreatedAt.plus(1, ChronoUnit.MICROS);
    List<String> aggregate = DispatchOrder.aggregateOf(event);
    long sequence = sequences.merge(aggregate, 1L, Long::sum);
    Row row = new Row(event.toStored().sequence(sequence).build(), lastCreatedAt, now);
    rows.put(event.id(), row);
    open.add(row);
    openByAggregate.computeIfAbsent(aggregate, k -> new TreeSet<>(AGGREGATE_ORDER)).add(row);
  }

  /** Stores every event, or none if one of them is a duplicate. */
  @Override
  public synchronized void append(Collection<OutboxEvent> events) {
    Set<UUID> ids = new HashSet<>();
    for (OutboxEvent e : events) {
      if (rows.containsKey(e.id()) || !ids.add(e.id())) {
        throw new DuplicateEventException(e.id());
      }
    }
    events.forEach(this::append);
  }

  @Override
  public synchronized List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder,
      Set<String> pausedTopics) {
    return snapshots(candidates(now(), preserveAggregateOrder, false, pausedTopics, limit, null, Set.of(), false),
        limit);
  }

  @Override
  public synchronized List<OutboxEvent> fetchPendingHeads(int limit, Set<String> pausedTopics, Set<UUID> inFlight,
      boolean holdOnDeadLetter) {
    return snapshots(candidates(now(), true, false, pausedTopics, limit, null, inFlight, holdOnDeadLetter), limit);
  }

  /** Goes on right after {@code after} in dispatch order, across priorities. */
  @Override
  public synchronized List<OutboxEvent> fetchPendingAfter(OutboxEvent after, int limit, Set<String> pausedTopics,
      Collection<OutboxEvent> inFlight) {
    Objects.requireNonNull(after.createdAt(), "after: an event as the store returned it");
    Set<UUID> leftOut = inFlight.stream().map(OutboxEvent::id).collect(Collectors.toSet());
    return snapshots(candidates(now(), false, false, pausedTopics, limit, after, leftOut, false), limit);
  }

  private static List<OutboxEvent> snapshots(List<Row> rows, int limit) {
    List<OutboxEvent> result = new ArrayList<>();
    rows.stream().limit(limit).forEach(row -> result.add(row.snapshot()));
    return result;
  }

  @Override
  public synchronized List<OutboxEvent> claim(ClaimRequest request) {
    Instant now = now();
    Set<String> paused = request.pausedTopics();
    List<List<Row>> runs = new ArrayList<>();
    int scan = request.runs() ? Integer.MAX_VALUE : request.limit();
    for (Row head : candidates(now, request.ordered(), true, paused, scan, request.after(), Set.of(),
        request.holdOnDeadLetter())) {
      List<Row> run = new ArrayList<>(List.of(head));
      if (request.runs()) {
        for (Row row : openByAggregate.get(DispatchOrder.aggregateOf(head.event))) {
          if (row == head) {
            continue;
          }
          // behind the head only due PENDING events: an expired run is retaken head first, one by one
          boolean fits = row.status == OutboxStatus.PENDING && !row.nextAttemptAt.isAfter(now)
              && !paused.contains(row.event.topic());
          if (run.size() == request.maxRun() || !fits) {
            break;
          }
          run.add(row);
        }
      }
      runs.add(run);
    }
    List<OutboxEvent> result = new ArrayList<>();
    for (Row row : DispatchOrder.interleave(runs, request.limit())) {
      row.status = OutboxStatus.PROCESSING;
      row.attempts++;
      row.leaseOwner = request.owner();
      row.leaseUntil = now.plus(request.leaseTtl());
      result.add(row.snapshot());
    }
    return result;
  }

  @Override
  public synchronized Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    Instant now = now();
    return eachFenced(events, (row, e) -> {
      countUnclaimedAttempt(row, e);
      row.dispatchedAt = now;
      close(row, OutboxStatus.DISPATCHED);
    });
  }

  @Override
  public synchronized boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    Row row = fenced(event);
    if (row == null) {
      return false;
    }
    countUnclaimedAttempt(row, event);
    row.reopen(now().plus(delay));
    row.lastError = error;
    return true;
  }

  @Override
  public synchronized boolean markDead(OutboxEvent event, String error) {
    Row row = fenced(event);
    if (row == null) {
      return false;
    }
    countUnclaimedAttempt(row, event);
    row.lastError = error;
    close(row, OutboxStatus.DLQ);
    return true;
  }

  @Override
  public synchronized Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    Instant at = now().plus(delay);
    return eachFenced(events, (row, e) -> {
      if (e.leaseOwner() != null) {
        row.attempts--; // the claim counted an attempt that never happened
      }
      row.reopen(at);
    });
  }

  @Override
  public synchronized Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
    Instant until = now().plus(leaseTtl);
    List<OutboxEvent> leased = events.stream().filter(e -> e.leaseOwner() != null).toList();
    return eachFenced(leased, (row, e) -> row.leaseUntil = until);
  }

  @Override
  public synchronized Optional<OutboxEvent> find(UUID id) {
    Row row = rows.get(id);
    return row == null ? Optional.empty() : Optional.of(row.snapshot());
  }

  @Override
  public synchronized Map<OutboxStatus, Long> countByStatus() {
    Map<OutboxStatus, Long> counts = new EnumMap<>(OutboxStatus.class);
    for (OutboxStatus s : OutboxStatus.values()) {
      counts.put(s, 0L);
    }
    rows.values().forEach(r -> counts.merge(r.status, 1L, Long::sum));
    return counts;
  }

  @Override
  public synchronized Optional<Duration> oldestPendingAge() {
    return oldestPendingAge(Set.of());
  }

  @Override
  public synchronized Optional<Duration> oldestPendingAge(Set<String> exceptTopics) {
    Objects.requireNonNull(exceptTopics, "exceptTopics");
    return open.stream().filter(r -> !exceptTopics.contains(r.event.topic())).map(r -> r.createdAt)
        .min(Comparator.naturalOrder()).map(oldest -> Duration.between(oldest, now()));
  }

  @Override
  public synchronized List<HeldAggregate> heldAggregates() {
    List<Row> deadHeads = new ArrayList<>();
    for (Map.Entry<List<String>, TreeSet<Row>> dead : deadByAggregate.entrySet()) {
      if (openByAggregate.containsKey(dead.getKey())) {
        deadHeads.add(dead.getValue().first());
      }
    }
    deadHeads.sort(AGGREGATE_ORDER);
    List<HeldAggregate> held = new ArrayList<>();
    for (Row dead : deadHeads) {
      int waiting = openByAggregate.get(DispatchOrder.aggregateOf(dead.event)).size();
      held.add(new HeldAggregate(dead.event.aggregateType(), dead.event.aggregateId(), dead.event.id(), waiting));
    }
    return held;
  }

  /** Where {@code event} sorts among the open rows, for a read or claim going on after it. */
  private static Row position(OutboxEvent event) {
    return new Row(event, event.createdAt(), event.createdAt());
  }

  /**
   * Available rows in dispatch order; in ordered mode only each aggregate's available head. Without
   * ordering the scan starts after {@code after} when given, skips {@code leftOut} and stops after
   * {@code limit} rows, so a batch costs its size, not the backlog's. With {@code hold}, an aggregate with a
   * {@code DLQ} event has none.
   */
  private List<Row> candidates(Instant now, boolean preserveAggregateOrder, boolean claiming, Set<String> paused,
      int limit, OutboxEvent after, Set<UUID> leftOut, boolean hold) {
    List<Row> result = new ArrayList<>();
    if (preserveAggregateOrder) {
      for (Map.Entry<List<String>, TreeSet<Row>> aggregate : openByAggregate.entrySet()) {
        Row head = aggregate.getValue().first(); // a paused head still hides the rest of its aggregate
        boolean held = hold && deadByAggregate.containsKey(aggregate.getKey());
        if (!held && head.isAvailable(now, claiming) && !paused.contains(head.event.topic())
            && !leftOut.contains(head.event.id())) {
          result.add(head);
        }
      }
      result.sort(DISPATCH_ORDER);
    } else {
      for (Row row : after == null ? open : open.tailSet(position(after), false)) {
        if (result.size() == limit) {
          break;
        }
        if (row.isAvailable(now, claiming) && !paused.contains(row.event.topic())
            && !leftOut.contains(row.event.id())) {
          result.add(row);
        }
      }
    }
    return result;
  }

  /** The row if the caller's view of it still holds: same lease, or still PENDING for a lease-less read. */
  private Row fenced(OutboxEvent e) {
    Row row = rows.get(e.id());
    if (row == null) {
      return null;
    }
    if (e.leaseOwner() == null) {
      return row.status == OutboxStatus.PENDING ? row : null;
    }
    return row.status == OutboxStatus.PROCESSING && e.leaseOwner().equals(row.leaseOwner) ? row : null;
  }

  private Set<UUID> eachFenced(Collection<OutboxEvent> events, BiConsumer<Row, OutboxEvent> change) {
    Set<UUID> changed = new HashSet<>();
    for (OutboxEvent e : events) {
      Row row = fenced(e);
      if (row != null) {
        change.accept(row, e);
        changed.add(e.id());
      }
    }
    return changed;
  }

  private static void countUnclaimedAttempt(Row row, OutboxEvent e) {
    if (e.leaseOwner() == null) {
      row.attempts++; // no claim counted this attempt
    }
  }

  private void close(Row row, OutboxStatus terminal) {
    row.status = terminal;
    if (terminal == OutboxStatus.DLQ) {
      row.leaseOwner = null; // a dispatched row keeps the claim that dispatched it
    }
    row.leaseUntil = null;
    open.remove(row);
    List<String> key = DispatchOrder.aggregateOf(row.event);
    TreeSet<Row> aggregate = openByAggregate.get(key);
    aggregate.remove(row);
    if (aggregate.isEmpty()) {
      openByAggregate.remove(key);
    }
    if (terminal == OutboxStatus.DLQ) {
      deadByAggregate.computeIfAbsent(key, k -> new TreeSet<>(AGGREGATE_ORDER)).add(row);
    }
  }

  private Instant now() {
    return clock.instant().truncatedTo(ChronoUnit.MICROS);
  }

  private static final class Row {
    final OutboxEvent event;
    final Instant createdAt;
    OutboxStatus status = OutboxStatus.PENDING;
    int attempts;
    Instant nextAttemptAt;
    String lastError;
    String leaseOwner;
    Instant leaseUntil;
    Instant dispatchedAt;

    Row(OutboxEvent event, Instant createdAt, Instant due) {
      this.event = event;
      this.createdAt = createdAt;
      this.nextAttemptAt = due;
    }

    void reopen(Instant at) {
      status = OutboxStatus.PENDING;
      nextAttemptAt = at;
      leaseOwner = null;
      leaseUntil = null;
    }

    boolean isAvailable(Instant now, boolean claiming) {
      return switch (status) {
        case PENDING -> !nextAttemptAt.isAfter(now);
        case PROCESSING -> claiming && leaseUntil.isBefore(now);
        default -> false;
      };
    }

    OutboxEvent snapshot() {
      return event.toStored().createdAt(createdAt).status(status).attempts(attempts).nextAttemptAt(nextAttemptAt)
          .lastError(lastError).lease(leaseOwner, leaseUntil).dispatchedAt(dispatchedAt).build();
    }
  }
}
