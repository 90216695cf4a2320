package io.mic.outbox;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

/**
 * Where outbox events live, as a dispatcher sees them. Appending is not part of this interface because it
 * belongs to the caller's transaction, whose shape depends on the store (a JDBC connection, a map, …).
 *
 * <h2>Rules every implementation keeps</h2>
 * (checked by {@code OutboxStoreContractTest} in the {@code outbox-core} test-jar)
 * <ul>
 *   <li><b>Visibility.</b> An event is <i>available</i> when it is {@code PENDING} and its
 *       {@code nextAttemptAt} has passed, or (for {@link #claim}) {@code PROCESSING} with an expired
 *       lease. Available events come by {@code priority} (higher first), then {@code createdAt}, then
 *       {@code id} (as unsigned bytes).</li>
 *   <li><b>Ordered mode</b> ({@code preserveAggregateOrder}): per {@code (aggregateType, aggregateId)}
 *       only the oldest non-terminal event by {@code (createdAt, id)}, the <i>head</i>, may be returned,
 *       and only if it is itself available. A head waiting for a retry or under lease hides its
 *       successors; at most one event per aggregate is returned.</li>
 *   <li><b>Held aggregates</b> ({@link ClaimRequest#holdOnDeadLetter()}): an aggregate with a {@code DLQ}
 *       event has no head, until its dead events are redriven or purged;
 *       {@link #heldAggregates()} lists the aggregates it holds.</li>
 *   <li><b>Fencing.</b> An event returned by {@link #claim} carries its {@link OutboxEvent#leaseOwner()}.
 *       A mark applies only while the row is still {@code PROCESSING} under that same owner; otherwise it
 *       changes nothing and is reported as not applied. An event from {@link #fetchPending} (no lease)
 *       is marked only while it is still {@code PENDING}. No mark ever changes a terminal row.</li>
 *   <li><b>Attempts.</b> {@link #claim} counts an attempt on every claimed event, so an event that
 *       crashes its worker still runs out of attempts. Without a claim, the attempt is counted by the
 *       mark that records the outcome.</li>
 *   <li><b>Clock.</b> Times are the store's own (the database clock for SQL stores), never the
 *       caller's.</li>
 * </ul>
 */
public interface OutboxStore {

  /**
   * No-claim mode: reads up to {@code limit} available {@code PENDING} events without changing them,
   * skipping events of {@code pausedTopics} (in ordered mode a paused head still hides its successors).
   * Two dispatchers calling this concurrently may read the same events.
   */
  List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder, Set<String> pausedTopics);

  /** {@link #fetchPending(int, boolean, Set)} with nothing paused. */
  default List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder) {
    return fetchPending(limit, preserveAggregateOrder, Set.of());
  }

  /**
   * {@link #fetchPending(int, boolean, Set)} without the events {@code inFlight}: a pipelined dispatcher
   * reads its next batch while the events it read last are still being published, so still {@code PENDING}.
   * In ordered mode those events stay their aggregates' heads and keep hiding their successors.
   *
   * <p>This default reads {@code limit + inFlight.size()} events and drops the ones in flight; a store can
   * leave them out of its query instead.
   */
  default List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder, Set<String> pausedTopics,
      Set<UUID> inFlight) {
    if (inFlight.isEmpty()) {
      return fetchPending(limit, preserveAggregateOrder, pausedTopics);
    }
    return fetchPending(limit + inFlight.size(), preserveAggregateOrder, pausedTopics).stream()
        .filter(e -> !inFlight.contains(e.id())).limit(limit).toList();
  }

  /**
   * {@link #fetchPending(int, boolean, Set, Set)} in ordered mode, where with {@code holdOnDeadLetter} an
   * aggregate with a {@code DLQ} event has no head (see {@link HeldAggregate}). This
   * default refuses to hold: a store that holds aggregates overrides it.
   *
   * @throws UnsupportedOperationException when asked to hold by a store that cannot
   */
  default List<OutboxEvent> fetchPendingHeads(int limit, Set<String> pausedTopics, Set<UUID> inFlight,
      boolean holdOnDeadLetter) {
    if (holdOnDeadLetter) {
      throw new UnsupportedOperationException(getClass().getName() + " cannot hold aggregates behind dead"
          + " events: use a store that does (in-memory, JDBC) or leave holdAggregateOnDeadLetter unset");
    }
    return fetchPending(limit, true, pausedTopics, inFlight);
  }

  /**
   * Throughput mode: {@link #fetchPending(int, boolean, Set, Set)} going on from {@code after}, the last event
   * of the caller's previous read, so that a read of a backlog need not step again over the events before it,
   * which are in flight or done. A store may return only events that follow {@code after} in dispatch order,
   * and may stop early (the JDBC store stops at the end of {@code after}'s priority), or read from the start as
   * this default does; it never returns an event of {@code inFlight}. So a read going on can miss an event that
   * became available before {@code after}'s place (a retry that fell due, a late commit, a higher priority, a
   * topic resumed): a caller must read from the start too, as {@link AsyncOutboxDispatcher} does regularly.
   *
   * <p>The events in flight come whole, so that a store can leave out of its query those that come before
   * {@code after} (usually all of them): it would never meet their rows.
   *
   * @param after an event as this store returned it (its {@code priority}, {@code createdAt} and {@code id})
   */
  default List<OutboxEvent> fetchPendingAfter(OutboxEvent after, int limit, Set<String> pausedTopics,
      Collection<OutboxEvent> inFlight) {
    return fetchPending(limit, false, pausedTopics, inFlight.stream().map(OutboxEvent::id).collect(Collectors.toSet()));
  }

  /**
   * Claim mode: atomically moves up to {@code request.limit()} available events to {@code PROCESSING} under
   * a lease of {@code request.leaseTtl()} for {@code request.owner()}, counts an attempt on each, and
   * returns them with their new state, in {@link DispatchOrder}. Concurrent callers receive disjoint sets.
   * Events of the request's paused topics are skipped; in ordered mode a paused head still hides its
   * successors.
   *
   * <p>In ordered mode only each aggregate's head is claimable. With {@code maxRun > 1} the store also
   * claims, behind each head, up to {@code maxRun - 1} events that directly follow it in its aggregate, as
   * long as each is {@code PENDING}, due and not paused (a run of an expired claim is taken over head first,
   * one event at a time). A run is claimed atomically with its head, so other workers still see nothing
   * behind the head; the dispatcher publishes the run in order and stops it at the first failure. When the
   * batch cannot hold every run, earlier positions win: all heads first, then every second event, and so
   * on, and the result is in that order ({@link DispatchOrder#inWaves}). A store that does not support runs
   * may claim heads only.
   *
   * <p>In throughput mode, with {@link ClaimRequest#after()} set, the store claims only what follows that
   * event in dispatch order, and may stop at the end of its priority; a store that cannot start there may
   * ignore it and claim from the first available event, which is correct, only slower.
   */
  List<OutboxEvent> claim(ClaimRequest request);

  /**
   * {@link #claim(ClaimRequest)}, as a handle that records the batch's outcomes and ends its claim: the way a
   * dispatcher claims. This default hands the outcomes to this store's methods, which find a claim by the lease
   * owner in its rows; a store that holds something per claim overrides it (the JDBC store with
   * {@code transactionalClaims(true)}: the claim's transaction), and may then refuse {@link #claim}, whose
   * events carry no batch for their outcomes, with an {@link UnsupportedOperationException} that says so.
   */
  default ClaimedBatch claimBatch(ClaimRequest request) {
    return new StoreBatch(this, claim(request));
  }

  /** {@link #claim(ClaimRequest)} of heads or any events, without runs, with nothing paused. */
  default List<OutboxEvent> claim(String owner, int limit, Duration leaseTtl, boolean preserveAggregateOrder) {
    return claim(ClaimRequest.of(owner, limit, leaseTtl).ordered(preserveAggregateOrder));
  }

  /**
   * The pauses recorded in the store itself, which hold for every dispatcher process using it (a
   * cluster-wide pause, e.g. set by the {@code mic-outbox pause} command). Dispatchers read it at every
   * poll and add their own in-process pauses: under {@link PauseState#all()} they claim nothing, otherwise
   * they skip the paused topics as {@link #claim(ClaimRequest)} does. Paused events
   * stay in the store. Stores without shared pauses keep this default, which pauses nothing.
   */
  default PauseState pauseState() {
    return PauseState.NONE;
  }

  /**
   * Marks these events {@code DISPATCHED} (one statement for the whole collection on SQL stores).
   *
   * @return the ids actually marked; an id missing from the result lost its lease or changed state
   */
  Set<UUID> markDispatched(Collection<OutboxEvent> events);

  /**
   * Puts a failed event back to {@code PENDING}, not available before {@code delay} has passed, with the
   * error text.
   *
   * @return {@code false} when the mark changed nothing (lease lost or state changed)
   */
  boolean scheduleRetry(OutboxEvent event, Duration delay, String error);

  /**
   * Moves an event to the terminal {@code DLQ} status with the error text.
   *
   * @return {@code false} when the mark changed nothing (lease lost or state changed)
   */
  boolean markDead(OutboxEvent event, String error);

  /**
   * Puts untried events back to {@code PENDING}, available after {@code delay}, and takes back the attempt
   * their claim counted: used when the broker is unavailable or the dispatcher stops mid-batch.
   *
   * @return the ids actually released
   */
  Set<UUID> release(Collection<OutboxEvent> events, Duration delay);

  /**
   * Extends the leases of claimed events to {@code leaseTtl} from now, for batches that take long.
   *
   * @return the ids whose lease was extended; the others are no longer this claim's
   */
  Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl);

  Optional<OutboxEvent> find(UUID id);

  /**
   * The aggregates whose events wait behind a dead one, by their oldest dead event's {@code (createdAt, id)}:
   * each aggregate that has both a {@code DLQ} event and {@code PENDING} or {@code PROCESSING} events.
   * Only dispatchers built with {@code holdAggregateOnDeadLetter(true)} keep them waiting; others publish them,
   * so without holding the list is empty but for moments. This default, for stores that cannot tell, is
   * always empty.
   */
  default List<HeldAggregate> heldAggregates() {
    return List.of();
  }

  /** Row counts, with every status present (0 when none). */
  Map<OutboxStatus, Long> countByStatus();

  /** Age of the oldest {@code PENDING} or {@code PROCESSING} event, the lag operators watch; empty when none. */
  Optional<Duration> oldestPendingAge();

  /**
   * The lag of what is not paused: {@link #oldestPendingAge()} among the events of other topics than
   * {@code exceptTopics}, e.g. those of {@link #pauseState()}, whose events wait on purpose. A store that
   * cannot leave topics out keeps this default, the whole lag: on the safe side, a pause then shows as lag.
   */
  default Optional<Duration> oldestPendingAge(Set<String> exceptTopics) {
    Objects.requireNonNull(exceptTopics, "exceptTopics");
    return oldestPendingAge();
  }

  /**
   * How long the oldest open transaction of the store's database (other than this call's) has been
   * running, among those that hold back the cleanup of deleted and updated rows. A queue table turns
   * over every row it holds, so while such a transaction lasts its dead rows pile up and every claim
   * walks through more of them: the outbox slows down although nothing in it is wrong. Watch it next to
   * the lag and end the transaction when it grows (docs/operations.md).
   *
   * <p>Empty when no such transaction is open, or when the store cannot tell. Stores without transactions
   * of their own, such as {@link InMemoryOutboxStore}, keep this default, which is always empty. The JDBC
   * store reads the PostgreSQL xmin horizon (sessions holding a snapshot or a transaction id, and
   * prepared transactions) or the oldest InnoDB transaction on MariaDB; H2 cannot tell.
   */
  default Optional<Duration> oldestTransactionAge() {
    return Optional.empty();
  }

  /**
   * Dead row versions of the outbox table not yet vacuumed, as the database's statistics count them: every
   * mark and claim leaves one, and a queue table whose dead rows pile up (vacuum not keeping pace, or held
   * back by {@link #oldestTransactionAge() an old transaction}) slows every claim. Empty when the store
   * cannot tell; this default, kept by stores without such rows, always is. The JDBC store answers on
   * PostgreSQL ({@code pg_stat_user_tables.n_dead_tup}).
   */
  default OptionalLong deadTuples() {
    return OptionalLong.empty();
  }

  /**
   * Lets a dispatcher hear of events committed by any process, so it need not wait for its next poll:
   * {@code wakeUp} runs (on a thread of the store's) soon after such a commit, possibly more often than
   * there are commits, never with the store's locks held. Delivery is best effort: a dispatcher keeps
   * polling, which covers whatever a subscription misses. {@link AsyncOutboxDispatcher} subscribes at
   * {@code start()} and closes the subscription at {@code close()}.
   *
   * <p>Stores that cannot tell keep this default, which returns empty (the dispatcher then polls only).
   * The JDBC store subscribes on PostgreSQL when built with {@code notifyOnAppend(true)}.
   */
  default Optional<Subscription> subscribeToAppends(Runnable wakeUp) {
    return Optional.empty();
  }

  /** What {@link #subscribeToAppends} returns: closing it stops the wake-ups and frees what it holds. */
  interface Subscription extends AutoCloseable {
    /** Stops the wake-ups; idempotent, and throws nothing. */
    @Override
    void close();
  }
}
