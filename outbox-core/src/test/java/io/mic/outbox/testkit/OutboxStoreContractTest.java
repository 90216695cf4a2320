package io.mic.outbox.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.ClaimedBatch;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.PublishUnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The rules every {@link OutboxStore} keeps, checked through the store and through real dispatchers.
 * A store passes it with three methods:
 *
 * <pre>{@code
 * class MyStoreContractTest extends OutboxStoreContractTest {
 *   protected OutboxStore newStore() { ... }                // empty, fresh for each test
 *   protected void append(List<OutboxEvent> events) { ... }  // committed, in this order
 *   protected void elapse(Duration d) { ... }               // the store's clock moves forward by d
 * }
 * }</pre>
 *
 * The rules of held aggregates come with it ({@link HeldAggregatesContract}); a store with operator tools
 * redrives and purges dead letters there ({@code redriveDeadLetter}, {@code purgeDeadLetter}).
 *
 * <p>Times are checked against the store's own clock with small tolerances, so SQL stores whose clock is
 * the database's pass it too.
 */
public abstract class OutboxStoreContractTest implements HeldAggregatesContract {

  /** Slack for a store whose clock runs on (the database clock while the test works). */
  protected static final Duration SLACK = Duration.ofSeconds(2);

  protected OutboxStore store;

  /** A fresh, empty store. */
  protected abstract OutboxStore newStore();

  /** Appends and commits the events, in this order. */
  protected abstract void append(List<OutboxEvent> events);

  /** Moves the store's clock forward (or every stored time backward) by {@code d}. */
  protected abstract void elapse(Duration d);

  /**
   * Whether a claim writes its lease into the rows ({@code PROCESSING}, owner, lease end), the lease runs out on
   * the store's clock ({@link #elapse}), and each outcome shows in the table at once. A store whose claims are
   * held by database transactions answers {@code false}: its claimed rows stay as they were until the batch
   * ends, its lease is the database's idle timeout on the wall clock, and a batch's outcomes commit together;
   * the tests of those three things are switched off for it (assumed), not run against another rule.
   */
  protected boolean claimsWriteLeases() {
    return true;
  }

  /**
   * Whether a dispatched event's row stays in the store as {@code DISPATCHED}; {@code false} for a store that
   * deletes it at the mark, whose tests then check that the row is gone instead.
   */
  protected boolean keepsDispatchedRows() {
    return true;
  }

  /** Switches the test off for a store whose claims are not leases in its rows ({@link #claimsWriteLeases()}). */
  protected final void assumeClaimsWriteLeases() {
    Assumptions.assumeTrue(claimsWriteLeases(), "claims are held by transactions, not leases written into the rows");
  }

  @BeforeEach
  void createStore() {
    store = newStore();
  }

  @Override
  public final OutboxStore storeUnderTest() {
    return store;
  }

  @Override
  public final void appendEvents(List<OutboxEvent> events) {
    append(events);
  }

  @Override
  public final void elapseStoreClock(Duration d) {
    elapse(d);
  }

  // ---------------------------------------------------------------- claims, as a dispatcher holds them

  /** The batch of each claim of an event (by id and lease owner): the outcomes of the claim go there. */
  private final Map<Claimed, ClaimedBatch> batches = new ConcurrentHashMap<>();

  private record Claimed(UUID id, String owner) {
    Claimed(OutboxEvent e) {
      this(e.id(), e.leaseOwner());
    }
  }

  /**
   * Claims as a dispatcher does ({@link OutboxStore#claimBatch}), and the outcome helpers below record the
   * outcomes of the events in their batch as a dispatcher does: a lease's batch hands them to the store's methods
   * of the same names, a batch held by a transaction runs them there. Events of no batch (read, or of a claim
   * another took over) go to the store's methods.
   */
  protected final List<OutboxEvent> claim(ClaimRequest request) {
    ClaimedBatch batch = store.claimBatch(request);
    batch.events().forEach(e -> batches.put(new Claimed(e), batch));
    return batch.events();
  }

  protected final List<OutboxEvent> claim(String owner, int limit, Duration leaseTtl, boolean ordered) {
    return claim(ClaimRequest.of(owner, limit, leaseTtl).ordered(ordered));
  }

  protected final Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    return inBatches(events, ClaimedBatch::markDispatched, store::markDispatched);
  }

  protected final boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    ClaimedBatch batch = batches.get(new Claimed(event));
    return batch != null ? batch.scheduleRetry(event, delay, error) : store.scheduleRetry(event, delay, error);
  }

  protected final boolean markDead(OutboxEvent event, String error) {
    ClaimedBatch batch = batches.get(new Claimed(event));
    return batch != null ? batch.markDead(event, error) : store.markDead(event, error);
  }

  protected final Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    return inBatches(events, (batch, own) -> batch.release(own, delay), rest -> store.release(rest, delay));
  }

  protected final Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
    return inBatches(events, (batch, own) -> batch.renewLeases(own, leaseTtl),
        rest -> store.renewLeases(rest, leaseTtl));
  }

  private Set<UUID> inBatches(Collection<OutboxEvent> events,
      BiFunction<ClaimedBatch, List<OutboxEvent>, Set<UUID>> inBatch, Function<List<OutboxEvent>, Set<UUID>> rest) {
    Map<ClaimedBatch, List<OutboxEvent>> byBatch = new IdentityHashMap<>();
    List<OutboxEvent> unclaimed = new ArrayList<>();
    for (OutboxEvent e : events) {
      ClaimedBatch batch = batches.get(new Claimed(e));
      (batch == null ? unclaimed : byBatch.computeIfAbsent(batch, b -> new ArrayList<>())).add(e);
    }
    Set<UUID> changed = new HashSet<>();
    byBatch.forEach((batch, own) -> changed.addAll(inBatch.apply(batch, own)));
    if (!unclaimed.isEmpty()) {
      changed.addAll(rest.apply(unclaimed));
    }
    return changed;
  }

  /** Ends the claims a test left open, as a dispatcher closes its batches; a subclass may call it earlier. */
  @AfterEach
  protected final void closeBatches() {
    Set<ClaimedBatch> open = Collections.newSetFromMap(new IdentityHashMap<>());
    open.addAll(batches.values());
    open.forEach(ClaimedBatch::close);
    batches.clear();
  }

  // ---------------------------------------------------------------- helpers

  protected static OutboxEvent event(String aggregateId, int priority) {
    return OutboxEvent.builder()
        .aggregate("order", aggregateId)
        .topic("order.changed")
        .payload("{\"order\":\"" + aggregateId + "\",\"n\":" + ThreadLocalRandom.current().nextInt(1000) + "}")
        .priority(priority)
        .build();
  }

  protected static OutboxEvent event(String aggregateId) {
    return event(aggregateId, 0);
  }

  protected final void append(OutboxEvent... events) {
    append(List.of(events));
  }

  protected final OutboxEvent stored(OutboxEvent e) {
    return store.find(e.id()).orElseThrow(() -> new AssertionError("event " + e.id() + " not in the store"));
  }

  protected final OutboxDispatcher.Builder dispatcher(DispatchFn fn) {
    return OutboxDispatcher.builder().store(store).dispatchFn(fn);
  }

  /** Asserts that {@code e} was marked dispatched: its row is {@code DISPATCHED}, or gone where the mark deletes it. */
  protected final void assertDispatched(OutboxEvent e) {
    if (keepsDispatchedRows()) {
      assertThat(stored(e).status()).as("event %s", e.id()).isEqualTo(OutboxStatus.DISPATCHED);
    } else {
      assertThat(store.find(e.id())).as("the row of dispatched event %s", e.id()).isEmpty();
    }
  }

  /**
   * How many of the {@code appended} events were dispatched, by the store's counts: its {@code DISPATCHED}
   * rows, or, where the mark deletes the row, the rows gone.
   */
  protected final long dispatched(long appended) {
    Map<OutboxStatus, Long> counts = store.countByStatus();
    return keepsDispatchedRows() ? counts.get(OutboxStatus.DISPATCHED)
        : appended - counts.values().stream().mapToLong(Long::longValue).sum();
  }

  /** What a read finds of {@code e}: its status, or {@code gone}. */
  private String statusOf(OutboxEvent e) {
    return store.find(e.id()).map(x -> x.status().name()).orElse("gone");
  }

  private static List<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).toList();
  }

  private static final DispatchFn NO_OP = e -> {};

  // ---------------------------------------------------------------- storage

  @Test
  void appendedEventReadsBackWithEveryField() {
    OutboxEvent e = OutboxEvent.builder()
        .aggregate("invoice", "INV-7")
        .topic("billing.invoice-issued")
        .payload("{\"amount\":12.50,\"currency\":\"EUR\",\"note\":\"caf\u00e9 \u2615\"}")
        .header("tenant", "acme")
        .header("trace", "00-abc-01")
        .priority(7)
        .build();
    append(e);

    OutboxEvent s = stored(e);
    assertThat(s.id()).isEqualTo(e.id());
    assertThat(s.aggregateType()).isEqualTo("invoice");
    assertThat(s.aggregateId()).isEqualTo("INV-7");
    assertThat(s.topic()).isEqualTo("billing.invoice-issued");
    assertThat(s.payload()).contains("caf\u00e9 \u2615").contains("\"amount\":12.50");
    assertThat(s.headers()).containsExactly(Map.entry("tenant", "acme"), Map.entry("trace", "00-abc-01"));
    assertThat(s.priority()).isEqualTo(7);
    assertThat(s.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(s.attempts()).isZero();
    assertThat(s.lastError()).isNull();
    assertThat(s.leaseOwner()).isNull();
    assertThat(s.createdAt()).isNotNull();
    assertThat(store.find(UUID.randomUUID())).isEmpty();
  }

  // ---------------------------------------------------------------- the envelope

  private static final String TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

  @Test
  void appendedEventReadsBackWithItsEnvelope() {
    Instant business = Instant.parse("2026-03-01T09:30:15.123456Z");
    OutboxEvent given = OutboxEvent.builder().aggregate("invoice", "INV-8").topic("billing.invoice-issued")
        .payload("{}").schemaVersion(3).occurredAt(business).traceParent(TRACE).build();
    OutboxEvent plain = event("o-1");
    append(given);
    append(plain);

    OutboxEvent g = stored(given);
    assertThat(g.sequence()).isEqualTo(1);
    assertThat(g.schemaVersion()).isEqualTo(3);
    assertThat(g.occurredAt()).isEqualTo(business);
    assertThat(g.traceParent()).isEqualTo(TRACE);
    OutboxEvent p = stored(plain);
    assertThat(p.sequence()).isEqualTo(1);
    assertThat(p.schemaVersion()).isEqualTo(OutboxEvent.DEFAULT_SCHEMA_VERSION);
    assertThat(p.occurredAt()).as("business time defaults to the append time").isEqualTo(p.createdAt());
    assertThat(p.traceParent()).isNull();
  }

  @Test
  void eventsInABatchTakeTheAppendTimeAsBusinessTimeUnlessGiven() {
    Instant business = Instant.parse("2025-12-31T23:59:59.999999Z");
    OutboxEvent a = event("o-1");
    OutboxEvent b = OutboxEvent.builder().aggregate("order", "o-1").topic("order.changed").payload("{}")
        .occurredAt(business).schemaVersion(2).traceParent(TRACE).build();
    append(a, b);

    assertThat(stored(a).occurredAt()).isEqualTo(stored(a).createdAt());
    assertThat(stored(b).occurredAt()).isEqualTo(business);
    assertThat(stored(b).schemaVersion()).isEqualTo(2);
    assertThat(stored(b).traceParent()).isEqualTo(TRACE);
  }

  @Test
  void sequencesNumberEachAggregateFromOneInAppendOrder() {
    OutboxEvent a1 = event("a");
    OutboxEvent b1 = event("b");
    OutboxEvent a2 = event("a");
    OutboxEvent a3 = event("a");
    OutboxEvent b2 = event("b");
    OutboxEvent otherType = OutboxEvent.builder().aggregate("invoice", "a").topic("billing.issued").payload("{}")
        .build();
    append(a1, b1);              // one call: a batch over two aggregates
    append(a2);                  // one event
    append(a3, otherType, b2);   // a batch again
    List<OutboxEvent> all = List.of(a1, b1, a2, a3, b2, otherType);

    assertThat(all).extracting(e -> stored(e).sequence()).containsExactly(1L, 1L, 2L, 3L, 2L, 1L);
  }

  @Test
  void aBatchNumbersItsEventsInTheOrderGiven() {
    List<OutboxEvent> batch = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      batch.add(OutboxEvent.builder().id(UUID.randomUUID()).aggregate("order", "hot").topic("order.changed")
          .payload("{\"i\":" + i + "}").build());
    }
    append(event("hot"));
    append(batch);

    for (int i = 0; i < batch.size(); i++) {
      assertThat(stored(batch.get(i)).sequence()).as("event %d of the batch", i).isEqualTo(i + 2L);
    }
  }

  @Test
  void claimedAndFetchedEventsCarryTheEnvelope() {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "o-9").topic("order.changed").payload("{}")
        .schemaVersion(4).traceParent(TRACE).build();
    append(event("o-9"), e);

    OutboxEvent fetched = store.fetchPending(10, false).get(1);
    OutboxEvent claimed = claim("w", 10, Duration.ofMinutes(1), false).get(1);
    for (OutboxEvent read : List.of(fetched, claimed)) {
      assertThat(read.id()).isEqualTo(e.id());
      assertThat(read.sequence()).isEqualTo(2);
      assertThat(read.schemaVersion()).isEqualTo(4);
      assertThat(read.traceParent()).isEqualTo(TRACE);
      assertThat(read.occurredAt()).isEqualTo(stored(e).createdAt());
    }
  }

  @Test
  void sequencesFollowTheDispatchOrderOfEachAggregate() {
    for (int i = 0; i < 20; i++) {
      append(event("agg-" + (i % 3)), event("agg-" + ((i + 1) % 3)));
    }
    Map<String, List<Long>> delivered = new HashMap<>();
    OutboxDispatcher d = dispatcher(e -> delivered.computeIfAbsent(e.aggregateId(), k -> new ArrayList<>())
        .add(e.sequence())).preserveAggregateOrder(true).useClaim(true).batchSize(7).build();
    while (!d.dispatchOnce().isEmpty()) {
      // drain
    }
    assertThat(delivered.keySet()).containsExactlyInAnyOrder("agg-0", "agg-1", "agg-2");
    delivered.forEach((aggregate, sequences) -> {
      List<Long> expected = new ArrayList<>();
      for (long n = 1; n <= sequences.size(); n++) {
        expected.add(n);
      }
      assertThat(sequences).as("sequences delivered for %s", aggregate).isEqualTo(expected);
    });
  }

  @Test
  void countByStatusListsEveryStatus() {
    assertThat(store.countByStatus()).containsOnly(
        Map.entry(OutboxStatus.PENDING, 0L), Map.entry(OutboxStatus.PROCESSING, 0L),
        Map.entry(OutboxStatus.DISPATCHED, 0L), Map.entry(OutboxStatus.DLQ, 0L));
    append(event("1"), event("2"), event("3"));
    claim("w", 1, Duration.ofMinutes(1), false);
    long leased = claimsWriteLeases() ? 1 : 0; // a claim held by a transaction leaves its row PENDING
    assertThat(store.countByStatus()).containsOnly(
        Map.entry(OutboxStatus.PENDING, 3L - leased), Map.entry(OutboxStatus.PROCESSING, leased),
        Map.entry(OutboxStatus.DISPATCHED, 0L), Map.entry(OutboxStatus.DLQ, 0L));
  }

  @Test
  void oldestPendingAgeIsTheLag() {
    assertThat(store.oldestPendingAge()).isEmpty();
    OutboxEvent e = event("1");
    append(e);
    elapse(Duration.ofSeconds(30));
    assertThat(store.oldestPendingAge()).hasValueSatisfying(age ->
        assertThat(age).isBetween(Duration.ofSeconds(30), Duration.ofSeconds(30).plus(SLACK)));
    dispatcher(NO_OP).build().dispatchOnce();
    assertThat(store.oldestPendingAge()).isEmpty();
  }

  // ---------------------------------------------------------------- throughput mode

  @Test
  void pendingEventsComeByPriorityThenArrival() {
    OutboxEvent a = event("a", 0);
    OutboxEvent b = event("b", 5);
    OutboxEvent c = event("c", 0);
    OutboxEvent d = event("d", 5);
    OutboxEvent e = event("e", -3);
    append(a, b, c, d, e);
    assertThat(ids(store.fetchPending(10, false))).containsExactly(b.id(), d.id(), a.id(), c.id(), e.id());
    assertThat(ids(store.fetchPending(2, false))).containsExactly(b.id(), d.id());
    assertThat(ids(claim("w1", 3, Duration.ofMinutes(1), false))).containsExactly(b.id(), d.id(), a.id());
    assertThat(ids(claim("w2", 10, Duration.ofMinutes(1), false))).containsExactly(c.id(), e.id());
  }

  @Test
  void aReadCanLeaveOutTheEventsInFlight() {
    OutboxEvent a = event("a");
    OutboxEvent b = event("b", 5);
    OutboxEvent c = event("c");
    OutboxEvent a2 = event("a");
    OutboxEvent d = event("d");
    append(a, b, c, a2, d);
    assertThat(ids(store.fetchPending(2, false, Set.of(), Set.of(b.id(), a.id()))))
        .containsExactly(c.id(), a2.id());
    assertThat(ids(store.fetchPending(10, true, Set.of(), Set.of(a.id(), c.id()))))
        .as("ordered mode: the head in flight still hides its successor").containsExactly(b.id(), d.id());
    assertThat(ids(store.fetchPending(10, false, Set.of(), Set.of()))).containsExactly(b.id(), a.id(), c.id(),
        a2.id(), d.id());
  }

  @Test
  void aReadGoingOnAfterAnEventReturnsWhatFollowsIt() {
    OutboxEvent a = event("a");
    OutboxEvent b = event("b", 5);
    OutboxEvent c = event("c");
    OutboxEvent d = event("d");
    OutboxEvent e = event("e");
    append(a, b, c, d, e);
    List<OutboxEvent> first = store.fetchPending(2, false);
    assertThat(ids(first)).containsExactly(b.id(), a.id());
    OutboxEvent position = first.get(1);
    assertThat(ids(store.fetchPendingAfter(position, 10, Set.of(), first))).containsExactly(c.id(), d.id(), e.id());
    assertThat(ids(store.fetchPendingAfter(position, 2, Set.of(), first))).containsExactly(c.id(), d.id());
    List<OutboxEvent> withD = List.of(first.get(0), first.get(1), stored(d));
    assertThat(ids(store.fetchPendingAfter(position, 10, Set.of(), withD)))
        .as("never an event in flight").containsExactly(c.id(), e.id());
    assertThat(ids(store.fetchPendingAfter(position, 10, Set.of("order.changed"), first)))
        .as("never a paused topic").isEmpty();
  }

  /**
   * A claim going on after an event claims what follows it in dispatch order, under its own lease, and leaves
   * alone what became available before it (here a released event): a claim from the start takes that.
   */
  @Test
  void aClaimGoingOnAfterAnEventClaimsWhatFollowsIt() {
    assumeClaimsWriteLeases();
    OutboxEvent a = event("a");
    OutboxEvent b = event("b");
    OutboxEvent c = event("c");
    OutboxEvent d = event("d");
    OutboxEvent e = event("e");
    append(a, b, c, d, e);
    Duration ttl = Duration.ofMinutes(1);
    List<OutboxEvent> first = claim(ClaimRequest.of("w1", 2, ttl));
    assertThat(ids(first)).containsExactly(a.id(), b.id());
    assertThat(release(List.of(first.get(0)), Duration.ZERO)).containsExactly(a.id());
    List<OutboxEvent> next = claim(ClaimRequest.of("w2", 2, ttl).after(first.get(1)));
    assertThat(ids(next)).as("what follows the last event claimed, not the event released before it")
        .containsExactly(c.id(), d.id());
    assertThat(next).allSatisfy(x -> {
      assertThat(x.status()).isEqualTo(OutboxStatus.PROCESSING);
      assertThat(x.leaseOwner()).isEqualTo("w2");
    });
    assertThat(claim(ClaimRequest.of("w3", 10, ttl).after(next.get(1)).skipping(Set.of("order.changed"))))
        .as("never a paused topic").isEmpty();
    assertThat(ids(claim(ClaimRequest.of("w4", 10, ttl)))).as("from the start: the released event too")
        .containsExactly(a.id(), e.id());
    assertThat(markDispatched(next)).containsExactlyInAnyOrder(c.id(), d.id());
  }

  @Test
  void eventsAppendedInOneCallKeepTheirOrder() {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      events.add(event("same"));
    }
    append(events);
    assertThat(ids(store.fetchPending(100, false))).containsExactlyElementsOf(ids(events));
  }

  /**
   * Caller-supplied random ids sort in no particular order, so only distinct, increasing arrival times
   * keep a batch in the order given; a store that stamps a whole batch with one time dispatches it in id
   * order instead.
   */
  @Test
  void aBatchWithRandomIdsKeepsTheOrderGiven() {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 2_000; i++) {
      events.add(OutboxEvent.builder().id(UUID.randomUUID()).aggregate("order", "o" + (i % 40))
          .topic("order.changed").payload("{\"n\":" + i + "}").build());
    }
    append(events);
    List<UUID> given = ids(events);
    List<UUID> fetched = ids(store.fetchPending(2_000, false));
    assertThat(inversions(given, fetched)).as("inversions in fetchPending").isZero();
    assertThat(fetched).containsExactlyElementsOf(given);
    assertThat(ids(store.fetchPending(2_000, true))).as("ordered mode: the heads, in the order given")
        .containsExactlyElementsOf(given.subList(0, 40));
    List<UUID> claimed = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      claimed.addAll(ids(claim("w" + i, 500, Duration.ofMinutes(1), false)));
    }
    assertThat(inversions(given, claimed)).as("inversions in claim").isZero();
    assertThat(claimed).containsExactlyElementsOf(given);
  }

  /** Pairs of {@code actual} that come in the opposite order in {@code expected}. */
  private static long inversions(List<UUID> expected, List<UUID> actual) {
    Map<UUID, Integer> position = new HashMap<>();
    for (int i = 0; i < expected.size(); i++) {
      position.put(expected.get(i), i);
    }
    long inversions = 0;
    for (int i = 0; i < actual.size(); i++) {
      for (int j = i + 1; j < actual.size(); j++) {
        if (position.get(actual.get(i)) > position.get(actual.get(j))) {
          inversions++;
        }
      }
    }
    return inversions;
  }

  /** Priorities span the whole int range: negating one would overflow at Integer.MIN_VALUE. */
  @Test
  void extremePrioritiesComeHighestFirst() {
    OutboxEvent low = event("low", Integer.MIN_VALUE);
    OutboxEvent zero = event("zero", 0);
    OutboxEvent high = event("high", Integer.MAX_VALUE);
    OutboxEvent lowToo = event("low2", Integer.MIN_VALUE + 1);
    append(low, zero, high, lowToo);
    List<UUID> expected = List.of(high.id(), zero.id(), lowToo.id(), low.id());
    assertThat(ids(store.fetchPending(10, false))).containsExactlyElementsOf(expected);
    assertThat(ids(store.fetchPending(10, true))).containsExactlyElementsOf(expected);
    List<OutboxEvent> claimed = claim("w1", 10, Duration.ofMinutes(1), false);
    assertThat(ids(claimed)).containsExactlyElementsOf(expected);
    assertThat(release(claimed, Duration.ZERO)).hasSize(4); // the events are claimable again
    claimed = claim("w2", 10, Duration.ofMinutes(1), true);
    assertThat(ids(claimed)).containsExactlyElementsOf(expected);
    assertThat(release(claimed, Duration.ZERO)).hasSize(4);
    assertThat(ids(claim(ClaimRequest.of("w3", 10, Duration.ofMinutes(1)).inRuns(5)))).containsExactlyElementsOf(expected);
  }

  @Test
  void eachEventIsMarkedRightAfterItsPublication() {
    OutboxEvent a = event("a");
    OutboxEvent b = event("b");
    OutboxEvent c = event("c");
    append(a, b, c);
    List<String> seen = new ArrayList<>();
    List<OutboxEvent> order = List.of(a, b, c);
    DispatchResult r = dispatcher(e -> {
      int i = ids(order).indexOf(e.id());
      seen.add(e.aggregateId() + ":" + statusOf(e) + (i > 0 ? "/previous:" + statusOf(order.get(i - 1)) : ""));
    }).build().dispatchOnce();

    String marked = keepsDispatchedRows() ? "DISPATCHED" : "gone";
    assertThat(seen).containsExactly("a:PENDING", "b:PENDING/previous:" + marked, "c:PENDING/previous:" + marked);
    assertThat(r).isEqualTo(new DispatchResult(3, 3, 0, 0, 0, 0));
    assertDispatched(c);
    if (keepsDispatchedRows()) {
      assertThat(stored(c).dispatchedAt()).isNotNull();
      assertThat(stored(c).attempts()).isEqualTo(1);
    }
    assertThat(dispatcher(NO_OP).build().dispatchOnce().isEmpty()).isTrue();
  }

  @Test
  void failedEventIsRetriedWithBackoffAndOvertakenByLaterEvents() {
    OutboxEvent a = event("a");
    OutboxEvent b = event("b");
    append(a, b);
    List<String> published = new ArrayList<>();
    AtomicBoolean fail = new AtomicBoolean(true);
    OutboxDispatcher d = dispatcher(e -> {
      if (e.id().equals(a.id()) && fail.get()) {
        throw new IllegalStateException("broker said no to " + e.aggregateId());
      }
      published.add(e.aggregateId());
    }).retryBackoff(Duration.ofSeconds(10), Duration.ofMinutes(10)).build();

    assertThat(d.dispatchOnce()).isEqualTo(new DispatchResult(2, 1, 1, 0, 0, 0));
    assertThat(published).containsExactly("b");
    OutboxEvent failed = stored(a);
    assertThat(failed.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(failed.attempts()).isEqualTo(1);
    assertThat(failed.lastError()).isEqualTo("java.lang.IllegalStateException: broker said no to a");
    assertThat(Duration.between(failed.createdAt(), failed.nextAttemptAt()))
        .isBetween(Duration.ofSeconds(8), Duration.ofSeconds(12).plus(SLACK));

    assertThat(d.dispatchOnce().isEmpty()).as("not due before its backoff").isTrue();
    elapse(Duration.ofSeconds(13));
    fail.set(false);
    assertThat(d.dispatchOnce()).isEqualTo(new DispatchResult(1, 1, 0, 0, 0, 0));
    assertThat(published).containsExactly("b", "a");
    assertDispatched(a);
    if (keepsDispatchedRows()) {
      assertThat(stored(a).attempts()).isEqualTo(2);
    }
  }

  @Test
  void backoffDoublesPerAttempt() {
    OutboxEvent a = event("a");
    append(a);
    OutboxDispatcher d = dispatcher(e -> {
      throw new IllegalStateException("down");
    }).retryBackoff(Duration.ofSeconds(10), Duration.ofSeconds(35)).maxAttempts(10).build();
    Duration step = Duration.ofSeconds(40);
    long[] expectedBase = {10, 20, 35, 35};
    for (int i = 0; i < expectedBase.length; i++) {
      d.dispatchOnce();
      OutboxEvent s = stored(a);
      // the store's clock now reads createdAt + i steps (elapse moves the clock or shifts every stored time)
      Instant failedAt = s.createdAt().plus(step.multipliedBy(i));
      double seconds = Duration.between(failedAt, s.nextAttemptAt()).toMillis() / 1000.0;
      long base = expectedBase[i];
      assertThat(seconds).as("delay after attempt %d", s.attempts())
          .isBetween(base * 0.8 - SLACK.toSeconds(), Math.min(base * 1.2, 35) + SLACK.toSeconds());
      elapse(step);
    }
    assertThat(stored(a).attempts()).isEqualTo(4);
  }

  @Test
  void eventGoesToDlqAfterMaxAttemptsAndStaysThere() {
    OutboxEvent a = event("a");
    append(a);
    AtomicInteger calls = new AtomicInteger();
    OutboxDispatcher d = dispatcher(e -> {
      throw new IllegalArgumentException("poison #" + calls.incrementAndGet());
    }).maxAttempts(3).retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(1)).build();

    assertThat(d.dispatchOnce().retried()).isEqualTo(1);
    elapse(Duration.ofSeconds(5));
    assertThat(d.dispatchOnce().retried()).isEqualTo(1);
    elapse(Duration.ofSeconds(5));
    assertThat(d.dispatchOnce()).isEqualTo(new DispatchResult(1, 0, 0, 1, 0, 0));

    OutboxEvent dead = stored(a);
    assertThat(dead.status()).isEqualTo(OutboxStatus.DLQ);
    assertThat(dead.attempts()).isEqualTo(3);
    assertThat(dead.lastError()).isEqualTo("java.lang.IllegalArgumentException: poison #3");
    elapse(Duration.ofHours(1));
    assertThat(d.dispatchOnce().isEmpty()).isTrue();
    assertThat(claim("w", 10, Duration.ofMinutes(1), false)).isEmpty();
    assertThat(calls).hasValue(3);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DLQ, 1L);
  }

  @Test
  void dlqWorksTheSameInClaimMode() {
    OutboxEvent a = event("a");
    append(a);
    OutboxDispatcher d = dispatcher(e -> {
      throw new IllegalArgumentException("poison");
    }).useClaim(true).maxAttempts(2).retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(1)).build();
    assertThat(d.dispatchOnce().retried()).isEqualTo(1);
    assertThat(stored(a).attempts()).isEqualTo(1);
    assertThat(stored(a).leaseOwner()).isNull();
    elapse(Duration.ofSeconds(5));
    assertThat(d.dispatchOnce().deadLettered()).isEqualTo(1);
    assertThat(stored(a).status()).isEqualTo(OutboxStatus.DLQ);
    assertThat(stored(a).attempts()).isEqualTo(2);
  }

  // ---------------------------------------------------------------- claim mode

  @Test
  void claimLeasesEventsAndCountsAnAttempt() {
    assumeClaimsWriteLeases();
    OutboxEvent a = event("a");
    OutboxEvent b = event("b");
    append(a, b);
    List<OutboxEvent> claimed = claim("worker-1", 10, Duration.ofSeconds(60), false);

    assertThat(ids(claimed)).containsExactly(a.id(), b.id());
    for (OutboxEvent c : claimed) {
      assertThat(c.status()).isEqualTo(OutboxStatus.PROCESSING);
      assertThat(c.attempts()).isEqualTo(1);
      assertThat(c.leaseOwner()).isEqualTo("worker-1");
      assertThat(c.payload()).isEqualTo(stored(c).payload());
      OutboxEvent s = stored(c);
      assertThat(s.status()).isEqualTo(OutboxStatus.PROCESSING);
      assertThat(s.leaseOwner()).isEqualTo("worker-1");
      assertThat(Duration.between(s.createdAt(), s.leaseUntil()))
          .isBetween(Duration.ofSeconds(60), Duration.ofSeconds(60).plus(SLACK));
    }
    assertThat(claim("worker-2", 10, Duration.ofSeconds(60), false)).as("claims are disjoint").isEmpty();
    assertThat(store.fetchPending(10, false)).as("claimed events are not pending").isEmpty();
  }

  @Test
  void expiredLeaseIsReclaimedAndCountsAnotherAttempt() {
    assumeClaimsWriteLeases();
    OutboxEvent a = event("a");
    append(a);
    claim("dead-worker", 10, Duration.ofSeconds(30), false);
    elapse(Duration.ofSeconds(29));
    assertThat(claim("worker-2", 10, Duration.ofSeconds(30), false)).isEmpty();
    elapse(Duration.ofSeconds(2));
    List<OutboxEvent> again = claim("worker-2", 10, Duration.ofSeconds(30), false);
    assertThat(ids(again)).containsExactly(a.id());
    assertThat(again.get(0).attempts()).isEqualTo(2);
    assertThat(again.get(0).leaseOwner()).isEqualTo("worker-2");
  }

  @Test
  void marksFromAWorkerThatLostItsLeaseChangeNothing() {
    assumeClaimsWriteLeases();
    OutboxEvent a = event("a");
    append(a);
    OutboxEvent byOld = claim("old", 1, Duration.ofSeconds(10), false).get(0);
    elapse(Duration.ofSeconds(11));
    OutboxEvent byNew = claim("new", 1, Duration.ofSeconds(10), false).get(0);

    assertThat(markDispatched(List.of(byOld))).isEmpty();
    assertThat(scheduleRetry(byOld, Duration.ofSeconds(1), "late")).isFalse();
    assertThat(markDead(byOld, "late")).isFalse();
    assertThat(release(List.of(byOld), Duration.ZERO)).isEmpty();
    assertThat(renewLeases(List.of(byOld), Duration.ofMinutes(5))).isEmpty();
    OutboxEvent s = stored(a);
    assertThat(s.status()).isEqualTo(OutboxStatus.PROCESSING);
    assertThat(s.leaseOwner()).isEqualTo("new");
    assertThat(s.attempts()).isEqualTo(2);
    assertThat(s.lastError()).isNull();

    assertThat(markDispatched(List.of(byNew))).containsExactly(a.id());
    if (keepsDispatchedRows()) {
      assertThat(stored(a).leaseOwner()).as("a dispatched row names the claim that dispatched it").isEqualTo("new");
      assertThat(stored(a).leaseUntil()).isNull();
    }
    assertThat(markDead(byOld, "later still")).isFalse();
    assertThat(markDispatched(List.of(byNew))).as("a terminal row never changes").isEmpty();
    assertDispatched(a);
  }

  @Test
  void unclaimedMarksNeverOverwriteAClaimOrATerminalRow() {
    assumeClaimsWriteLeases();
    OutboxEvent a = event("a");
    append(a);
    OutboxEvent read = store.fetchPending(1, false).get(0);
    claim("w", 1, Duration.ofMinutes(1), false);
    assertThat(markDispatched(List.of(read))).isEmpty();
    assertThat(scheduleRetry(read, Duration.ofSeconds(1), "x")).isFalse();
    assertThat(stored(a).status()).isEqualTo(OutboxStatus.PROCESSING);
  }

  @Test
  void batchMarkReportsExactlyTheEventsItMarked() {
    OutboxEvent a = event("a");
    OutboxEvent b = event("b");
    OutboxEvent c = event("c");
    append(a, b, c);
    List<OutboxEvent> claimed = claim("w1", 3, Duration.ofSeconds(10), false);
    markDispatched(List.of(claimed.get(1)));
    assertThat(markDispatched(claimed)).containsExactlyInAnyOrder(a.id(), c.id());
    assertThat(dispatched(3)).isEqualTo(3);
  }

  @Test
  void eventThatCrashesItsWorkerEveryTimeStillReachesTheDlq() {
    assumeClaimsWriteLeases();
    OutboxEvent a = event("a");
    append(a);
    for (int i = 0; i < 3; i++) { // three workers died while publishing it
      assertThat(claim("doomed-" + i, 1, Duration.ofSeconds(5), false)).hasSize(1);
      elapse(Duration.ofSeconds(6));
    }
    AtomicInteger calls = new AtomicInteger();
    DispatchResult r = dispatcher(e -> calls.incrementAndGet()).useClaim(true).maxAttempts(3).build().dispatchOnce();
    assertThat(r.deadLettered()).isEqualTo(1);
    assertThat(calls).as("not published a fourth time").hasValue(0);
    OutboxEvent s = stored(a);
    assertThat(s.status()).isEqualTo(OutboxStatus.DLQ);
    assertThat(s.attempts()).isEqualTo(4);
    assertThat(s.lastError()).contains("claimed 4 times without an outcome");
  }

  @Test
  void dispatcherCountsALeaseLostToAnotherWorker() {
    assumeClaimsWriteLeases();
    OutboxEvent a = event("a");
    append(a);
    List<String> publishedBy = new CopyOnWriteArrayList<>();
    List<UUID> lost = new CopyOnWriteArrayList<>();
    OutboxDispatcher second = dispatcher(e -> publishedBy.add("second")).useClaim(true).name("second").build();
    OutboxDispatcher first = dispatcher(e -> {
      publishedBy.add("first");
      elapse(Duration.ofSeconds(31)); // a pause longer than the lease, as in a long GC
      assertThat(second.dispatchOnce().dispatched()).isEqualTo(1);
    }).useClaim(true).leaseTtl(Duration.ofSeconds(30)).name("first").listener(new OutboxListener() {
      @Override public void onLeaseLost(OutboxEvent event) {
        lost.add(event.id());
      }
    }).build();

    DispatchResult r = first.dispatchOnce();
    assertThat(r).isEqualTo(new DispatchResult(1, 0, 0, 0, 0, 1));
    assertThat(lost).containsExactly(a.id());
    assertThat(publishedBy).as("at-least-once: published twice").containsExactly("first", "second");
    assertDispatched(a);
    if (keepsDispatchedRows()) {
      assertThat(stored(a).attempts()).isEqualTo(2);
    }
  }

  /**
   * A publication that outlives the lease, in either publisher shape: the dispatcher keeps the lease of
   * its whole batch alive, so no other worker can claim and publish the events again.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void aPublicationSlowerThanTheLeaseKeepsItsLease() throws Exception {
    Duration lease = Duration.ofSeconds(1);
    for (boolean batchShape : new boolean[] {false, true}) {
      store = newStore();
      OutboxEvent slow = event("slow");
      OutboxEvent next = event("next");
      append(slow, next);
      List<OutboxEvent> stolen = new CopyOnWriteArrayList<>();
      Map<UUID, AtomicInteger> publications = new ConcurrentHashMap<>();
      DispatchFn publish = e -> {
        publications.computeIfAbsent(e.id(), k -> new AtomicInteger()).incrementAndGet();
        if (e.id().equals(slow.id())) {
          // hold the publication for 1.5 leases while another worker keeps trying to claim: unrenewed, the
          // lease would run out half a lease before the end
          long end = System.nanoTime() + lease.multipliedBy(3).dividedBy(2).toNanos();
          while (System.nanoTime() < end) {
            stolen.addAll(claim("thief", 10, lease, false));
            Thread.sleep(50);
          }
        }
      };
      DispatchFn fn = batchShape ? new BatchDispatchFn() {
        @Override public void dispatch(OutboxEvent event) {
          throw new AssertionError("the batch path must be used");
        }

        @Override public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws Exception {
          for (OutboxEvent e : events) {
            publish.dispatch(e);
          }
          return Map.of();
        }
      } : publish;
      DispatchResult r = dispatcher(fn).useClaim(true).leaseTtl(lease).build().dispatchOnce();
      assertThat(stolen).as("batch shape %s: claimed by another worker", batchShape).isEmpty();
      assertThat(r).as("batch shape %s", batchShape).isEqualTo(new DispatchResult(2, 2, 0, 0, 0, 0));
      assertThat(publications).containsOnlyKeys(slow.id(), next.id())
          .allSatisfy((id, n) -> assertThat(n).as("publications of %s", id).hasValue(1));
      assertDispatched(slow);
      if (keepsDispatchedRows()) {
        assertThat(stored(slow).attempts()).isEqualTo(1);
      }
    }
  }

  /**
   * Four workers, a lease of one second, and a publisher that hangs longer than the lease now and then:
   * every event is published exactly once and none reaches the DLQ.
   */
  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void publicationsThatOutliveTheLeaseCauseNoDuplicates() throws Exception {
    int total = 400;
    List<OutboxEvent> all = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      all.add(event("agg-" + (i % 40)));
    }
    append(all);
    Set<UUID> hanging = new HashSet<>();
    for (int i = 7; i < total; i += 100) {
      hanging.add(all.get(i).id());
    }
    Duration lease = Duration.ofSeconds(1);
    Map<UUID, AtomicInteger> publications = new ConcurrentHashMap<>();
    DispatchFn fn = e -> {
      publications.computeIfAbsent(e.id(), k -> new AtomicInteger()).incrementAndGet();
      if (hanging.contains(e.id())) {
        Thread.sleep(lease.toMillis() + 800);
      }
    };
    ExecutorService pool = Executors.newFixedThreadPool(4);
    AtomicBoolean done = new AtomicBoolean();
    List<Future<?>> futures = new ArrayList<>();
    for (int w = 0; w < 4; w++) {
      OutboxDispatcher d = dispatcher(fn).useClaim(true).leaseTtl(lease).batchSize(20).maxAttempts(3)
          .name("w" + w).build();
      futures.add(pool.submit(() -> {
        while (!done.get()) {
          if (d.dispatchOnce().isEmpty()) {
            Thread.sleep(5);
          }
        }
        return null;
      }));
    }
    try {
      await().atMost(Duration.ofSeconds(90)).until(() -> {
        Map<OutboxStatus, Long> counts = store.countByStatus();
        return counts.get(OutboxStatus.PENDING) + counts.get(OutboxStatus.PROCESSING) == 0;
      });
    } finally {
      done.set(true);
      for (Future<?> f : futures) {
        f.get(30, TimeUnit.SECONDS);
      }
      pool.shutdownNow();
    }
    assertThat(publications).hasSize(total);
    assertThat(publications.entrySet().stream().filter(e -> e.getValue().get() != 1).map(Map.Entry::getKey).toList())
        .as("events published more than once").isEmpty();
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DLQ, 0L);
    assertThat(dispatched(total)).isEqualTo(total);
  }

  @Test
  void renewLeasesExtendsOnlyOwnLeases() {
    assumeClaimsWriteLeases();
    OutboxEvent a = event("a");
    append(a);
    List<OutboxEvent> claimed = claim("w", 1, Duration.ofSeconds(10), false);
    elapse(Duration.ofSeconds(8));
    assertThat(renewLeases(claimed, Duration.ofSeconds(10))).containsExactly(a.id());
    elapse(Duration.ofSeconds(8));
    assertThat(claim("other", 1, Duration.ofSeconds(10), false)).as("renewed lease still held").isEmpty();
    elapse(Duration.ofSeconds(3));
    assertThat(claim("other", 1, Duration.ofSeconds(10), false)).hasSize(1);
  }

  @Test
  void releaseGivesBackTheAttemptItsClaimCounted() {
    OutboxEvent a = event("a");
    append(a);
    List<OutboxEvent> claimed = claim("w", 1, Duration.ofSeconds(60), false);
    assertThat(release(claimed, Duration.ofSeconds(20))).containsExactly(a.id());
    OutboxEvent s = stored(a);
    assertThat(s.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(s.attempts()).isZero();
    assertThat(s.leaseOwner()).isNull();
    assertThat(claim("w", 1, Duration.ofSeconds(60), false)).as("not before the delay").isEmpty();
    elapse(Duration.ofSeconds(21));
    assertThat(claim("w", 1, Duration.ofSeconds(60), false)).hasSize(1);
  }

  @Test
  void brokerOutageNeverBurnsAttempts() {
    for (boolean claim : new boolean[] {false, true}) {
      store = newStore();
      OutboxEvent a = event("a");
      OutboxEvent b = event("b");
      append(a, b);
      AtomicInteger calls = new AtomicInteger();
      OutboxDispatcher d = dispatcher(e -> {
        calls.incrementAndGet();
        throw new PublishUnavailableException("connection refused");
      }).useClaim(claim).maxAttempts(2).retryBackoff(Duration.ofSeconds(1), Duration.ofSeconds(1)).build();
      for (int i = 0; i < 5; i++) {
        assertThat(d.dispatchOnce()).as("claim=%s, round %d", claim, i).isEqualTo(new DispatchResult(2, 0, 0, 0, 2, 0));
        elapse(Duration.ofSeconds(2));
      }
      assertThat(calls).as("the batch stops at the first unavailable publish").hasValue(5);
      assertThat(stored(a).attempts()).isZero();
      assertThat(stored(b).attempts()).isZero();
      assertThat(store.countByStatus()).containsEntry(OutboxStatus.PENDING, 2L).containsEntry(OutboxStatus.DLQ, 0L);
    }
  }

  @Test
  void batchPublisherOutcomesAreAppliedPerEvent() {
    for (boolean claim : new boolean[] {false, true}) {
      store = newStore();
      OutboxEvent ok1 = event("ok1");
      OutboxEvent bad = event("bad");
      OutboxEvent down = event("down");
      OutboxEvent ok2 = event("ok2");
      append(ok1, bad, down, ok2);
      List<List<UUID>> calls = new ArrayList<>();
      io.mic.outbox.BatchDispatchFn fn = new io.mic.outbox.BatchDispatchFn() {
        @Override public void dispatch(OutboxEvent event) {
          throw new AssertionError("the batch path must be used");
        }

        @Override public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
          calls.add(ids(events));
          return Map.of(bad.id(), new IllegalStateException("rejected"),
              down.id(), new PublishUnavailableException("no ack before timeout"));
        }
      };
      DispatchResult r = dispatcher(fn).useClaim(claim).retryBackoff(Duration.ofSeconds(10), Duration.ofSeconds(10))
          .build().dispatchOnce();
      assertThat(calls).as("claim=%s", claim).containsExactly(List.of(ok1.id(), bad.id(), down.id(), ok2.id()));
      assertThat(r).isEqualTo(new DispatchResult(4, 2, 1, 0, 1, 0));
      assertDispatched(ok1);
      assertDispatched(ok2);
      assertThat(stored(bad).status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(stored(bad).attempts()).isEqualTo(1);
      assertThat(stored(bad).lastError()).isEqualTo("java.lang.IllegalStateException: rejected");
      assertThat(stored(down).status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(stored(down).attempts()).as("unavailable costs no attempt").isZero();
    }
  }

  // ---------------------------------------------------------------- ordered mode

  @Test
  void orderedModeShowsOnlyTheHeadOfEachAggregate() {
    OutboxEvent x1 = event("x");
    OutboxEvent x2 = event("x");
    OutboxEvent y1 = event("y");
    OutboxEvent x3 = event("x");
    OutboxEvent y2 = event("y");
    append(x1, x2, y1, x3, y2);
    assertThat(ids(store.fetchPending(10, true))).containsExactly(x1.id(), y1.id());
    assertThat(ids(claim("w", 10, Duration.ofMinutes(1), true))).containsExactly(x1.id(), y1.id());
  }

  @Test
  void sameIdAggregateOfAnotherTypeIsAnotherAggregate() {
    OutboxEvent order = event("42");
    OutboxEvent customer = OutboxEvent.builder().aggregate("customer", "42").topic("customer.changed")
        .payload("{}").build();
    append(order, customer);
    assertThat(ids(store.fetchPending(10, true))).containsExactly(order.id(), customer.id());
  }

  @Test
  void headWaitingForRetryBlocksItsSuccessors() {
    OutboxEvent x1 = event("x");
    OutboxEvent x2 = event("x");
    OutboxEvent y1 = event("y");
    append(x1, x2, y1);
    List<String> published = new ArrayList<>();
    AtomicBoolean fail = new AtomicBoolean(true);
    OutboxDispatcher d = dispatcher(e -> {
      if (e.id().equals(x1.id()) && fail.get()) {
        throw new IllegalStateException("x1 fails");
      }
      published.add(e.id().equals(x1.id()) ? "x1" : e.id().equals(x2.id()) ? "x2" : "y1");
    }).preserveAggregateOrder(true).retryBackoff(Duration.ofSeconds(10), Duration.ofSeconds(10)).build();

    assertThat(d.dispatchOnce()).isEqualTo(new DispatchResult(2, 1, 1, 0, 0, 0));
    assertThat(d.dispatchOnce().isEmpty()).as("x2 waits behind x1").isTrue();
    assertThat(stored(x2).status()).isEqualTo(OutboxStatus.PENDING);
    elapse(Duration.ofSeconds(13));
    fail.set(false);
    d.dispatchOnce();
    d.dispatchOnce();
    assertThat(published).containsExactly("y1", "x1", "x2");
  }

  @Test
  void leasedHeadBlocksItsSuccessorsUntilItIsDispatched() {
    OutboxEvent x1 = event("x");
    OutboxEvent x2 = event("x");
    append(x1, x2);
    List<OutboxEvent> first = claim("w1", 10, Duration.ofSeconds(60), true);
    assertThat(ids(first)).containsExactly(x1.id());
    assertThat(claim("w2", 10, Duration.ofSeconds(60), true)).isEmpty();
    if (claimsWriteLeases()) { // a row held by a transaction stays PENDING to a read without a claim
      assertThat(store.fetchPending(10, true)).isEmpty();
    }
    markDispatched(first);
    assertThat(ids(claim("w2", 10, Duration.ofSeconds(60), true))).containsExactly(x2.id());
  }

  @Test
  void expiredHeadIsReclaimedBeforeItsSuccessor() {
    assumeClaimsWriteLeases();
    OutboxEvent x1 = event("x");
    OutboxEvent x2 = event("x");
    append(x1, x2);
    claim("crashed", 10, Duration.ofSeconds(10), true);
    elapse(Duration.ofSeconds(11));
    assertThat(store.fetchPending(10, true)).as("a leased head is not pending, even expired").isEmpty();
    assertThat(ids(claim("w2", 10, Duration.ofSeconds(10), true))).containsExactly(x1.id());
  }

  @Test
  void deadLetteredHeadReleasesItsSuccessor() {
    OutboxEvent x1 = event("x");
    OutboxEvent x2 = event("x");
    append(x1, x2);
    List<UUID> published = new ArrayList<>();
    OutboxDispatcher d = dispatcher(e -> {
      if (e.id().equals(x1.id())) {
        throw new IllegalStateException("poison");
      }
      published.add(e.id());
    }).preserveAggregateOrder(true).useClaim(true).maxAttempts(1).aggregateRun(1).build();
    assertThat(d.dispatchOnce().deadLettered()).isEqualTo(1);
    assertThat(d.dispatchOnce().dispatched()).isEqualTo(1);
    assertThat(published).containsExactly(x2.id());
  }

  @Test
  void priorityNeverLetsAnEventOvertakeItsHead() {
    OutboxEvent x1 = event("x", 0);
    OutboxEvent x2 = event("x", 10);
    OutboxEvent y1 = event("y", 5);
    append(x1, x2, y1);
    assertThat(ids(store.fetchPending(10, true))).containsExactly(y1.id(), x1.id());
    List<UUID> published = new ArrayList<>();
    OutboxDispatcher d = dispatcher(e -> published.add(e.id())).preserveAggregateOrder(true).build();
    while (!d.dispatchOnce().isEmpty()) {
      // drain
    }
    assertThat(published).containsExactly(y1.id(), x1.id(), x2.id());
  }

  // ---------------------------------------------------------------- ordered runs (hot aggregates)

  @Test
  void claimRunsTakesConsecutiveEventsBehindEachHeadBreadthFirst() {
    OutboxEvent x1 = event("x");
    OutboxEvent x2 = event("x");
    OutboxEvent y1 = event("y");
    OutboxEvent x3 = event("x");
    OutboxEvent y2 = event("y");
    OutboxEvent x4 = event("x");
    append(x1, x2, y1, x3, y2, x4);
    List<OutboxEvent> claimed = claim(ClaimRequest.of("w1", 10, Duration.ofMinutes(1)).inRuns(3));
    assertThat(ids(claimed)).containsExactly(x1.id(), y1.id(), x2.id(), y2.id(), x3.id());
    assertThat(claimed).allSatisfy(e -> {
      assertThat(e.status()).isEqualTo(OutboxStatus.PROCESSING);
      assertThat(e.leaseOwner()).isEqualTo("w1");
      assertThat(e.attempts()).isEqualTo(1);
    });
    assertThat(claim(ClaimRequest.of("w2", 10, Duration.ofMinutes(1)).inRuns(3))).as("x4 waits behind the leased run").isEmpty();
  }

  @Test
  void claimRunsFillsTheBatchByPositionFirst() {
    OutboxEvent x1 = event("x");
    OutboxEvent x2 = event("x");
    OutboxEvent y1 = event("y");
    OutboxEvent y2 = event("y");
    append(x1, x2, y1, y2);
    assertThat(ids(claim(ClaimRequest.of("w", 3, Duration.ofMinutes(1)).inRuns(10)))).containsExactly(x1.id(), y1.id(), x2.id());
  }

  @Test
  void runStopsAtAnEventThatIsNotDue() {
    OutboxEvent z1 = event("z");
    OutboxEvent z2 = event("z");
    OutboxEvent z3 = event("z");
    append(z1, z2, z3);
    List<OutboxEvent> run = claim(ClaimRequest.of("a", 10, Duration.ofMinutes(1)).inRuns(10));
    assertThat(ids(run)).containsExactly(z1.id(), z2.id(), z3.id());
    assertThat(scheduleRetry(run.get(1), Duration.ofSeconds(60), "later")).isTrue();
    assertThat(release(List.of(run.get(0), run.get(2)), Duration.ZERO)).hasSize(2);
    assertThat(ids(claim(ClaimRequest.of("b", 10, Duration.ofMinutes(1)).inRuns(10)))).containsExactly(z1.id());
  }

  @Test
  void expiredRunIsTakenOverHeadFirstOneByOne() {
    assumeClaimsWriteLeases();
    OutboxEvent z1 = event("z");
    OutboxEvent z2 = event("z");
    OutboxEvent z3 = event("z");
    append(z1, z2, z3);
    claim(ClaimRequest.of("crashed", 10, Duration.ofSeconds(10)).inRuns(2));
    elapse(Duration.ofSeconds(11));
    List<OutboxEvent> head = claim(ClaimRequest.of("b", 10, Duration.ofSeconds(10)).inRuns(10));
    assertThat(ids(head)).as("z2 is still the crashed claim's; z3 waits behind it").containsExactly(z1.id());
    assertThat(head.get(0).attempts()).isEqualTo(2);
    markDispatched(head);
    List<OutboxEvent> next = claim(ClaimRequest.of("b", 10, Duration.ofSeconds(10)).inRuns(10));
    assertThat(ids(next)).containsExactly(z2.id(), z3.id());
    assertThat(next.get(0).attempts()).isEqualTo(2);
    assertThat(next.get(1).attempts()).isEqualTo(1);
  }

  @Test
  void hotAggregateDrainsInOneClaimAndStopsItsRunAtAFailure() {
    List<OutboxEvent> hot = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      hot.add(event("hot"));
    }
    append(hot);
    List<UUID> published = new ArrayList<>();
    AtomicBoolean failTenth = new AtomicBoolean(true);
    OutboxDispatcher d = dispatcher(e -> {
      if (e.id().equals(hot.get(9).id()) && failTenth.getAndSet(false)) {
        throw new IllegalStateException("once");
      }
      published.add(e.id());
    }).useClaim(true).preserveAggregateOrder(true).aggregateRun(100).batchSize(100)
        .retryBackoff(Duration.ofSeconds(10), Duration.ofSeconds(10)).build();

    assertThat(d.dispatchOnce()).isEqualTo(new DispatchResult(50, 9, 1, 0, 40, 0));
    assertThat(stored(hot.get(10)).status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(stored(hot.get(10)).attempts()).as("held back untried").isZero();
    assertThat(d.dispatchOnce().isEmpty()).as("the rest waits behind the retrying event").isTrue();
    elapse(Duration.ofSeconds(13));
    assertThat(d.dispatchOnce()).isEqualTo(new DispatchResult(41, 41, 0, 0, 0, 0));
    assertThat(published).containsExactlyElementsOf(ids(hot));
  }

  @Test
  void batchPublisherGetsRunsInWavesAndAFailureStopsItsAggregate() {
    OutboxEvent x1 = event("x");
    OutboxEvent x2 = event("x");
    OutboxEvent x3 = event("x");
    OutboxEvent y1 = event("y");
    OutboxEvent y2 = event("y");
    OutboxEvent y3 = event("y");
    append(x1, x2, x3, y1, y2, y3);
    List<List<UUID>> waves = new ArrayList<>();
    io.mic.outbox.BatchDispatchFn fn = new io.mic.outbox.BatchDispatchFn() {
      @Override public void dispatch(OutboxEvent event) {
        throw new AssertionError("the batch path must be used");
      }

      @Override public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        waves.add(ids(events));
        return events.stream().anyMatch(e -> e.id().equals(y2.id()))
            ? Map.of(y2.id(), new IllegalStateException("rejected")) : Map.of();
      }
    };
    DispatchResult r = dispatcher(fn).useClaim(true).preserveAggregateOrder(true)
        .retryBackoff(Duration.ofSeconds(10), Duration.ofSeconds(10)).build().dispatchOnce();
    assertThat(waves).containsExactly(List.of(x1.id(), y1.id()), List.of(x2.id(), y2.id()), List.of(x3.id()));
    assertThat(r).isEqualTo(new DispatchResult(6, 4, 1, 0, 1, 0));
    assertThat(stored(y3).status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(stored(y3).attempts()).isZero();
    assertDispatched(x3);
  }

  // ---------------------------------------------------------------- paused topics

  private static OutboxEvent onTopic(String aggregateId, String topic) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload("{}").build();
  }

  @Test
  void pausedTopicsAreSkippedByReadsAndClaims() {
    OutboxEvent a = onTopic("a", "billing.paused");
    OutboxEvent b = onTopic("b", "order.created");
    OutboxEvent c = onTopic("c", "billing.paused");
    append(a, b, c);
    Set<String> paused = Set.of("billing.paused");
    assertThat(ids(store.fetchPending(10, false, paused))).containsExactly(b.id());
    assertThat(ids(claim(ClaimRequest.of("w", 10, Duration.ofMinutes(1)).ordered(false).skipping(paused)))).containsExactly(b.id());
    assertThat(ids(claim(ClaimRequest.of("w", 10, Duration.ofMinutes(1)).ordered(false).skipping(Set.of())))).containsExactly(a.id(), c.id());
  }

  @Test
  void aPausedHeadStillBlocksItsAggregate() {
    OutboxEvent z1 = onTopic("z", "billing.paused");
    OutboxEvent z2 = onTopic("z", "order.created");
    OutboxEvent y1 = onTopic("y", "order.created");
    append(z1, z2, y1);
    Set<String> paused = Set.of("billing.paused");
    assertThat(ids(store.fetchPending(10, true, paused))).containsExactly(y1.id());
    assertThat(ids(claim(ClaimRequest.of("w", 10, Duration.ofMinutes(1)).inRuns(10).skipping(paused)))).containsExactly(y1.id());
    assertThat(ids(claim(ClaimRequest.of("w2", 10, Duration.ofMinutes(1)).ordered(true).skipping(paused)))).isEmpty();
  }

  @Test
  void aRunStopsAtAPausedTopic() {
    OutboxEvent z1 = onTopic("z", "order.created");
    OutboxEvent z2 = onTopic("z", "billing.paused");
    OutboxEvent z3 = onTopic("z", "order.created");
    append(z1, z2, z3);
    assertThat(ids(claim(ClaimRequest.of("w", 10, Duration.ofMinutes(1)).inRuns(10).skipping(Set.of("billing.paused")))))
        .containsExactly(z1.id());
  }

  /** A health check judges the lag without the paused topics, whose events wait on purpose. */
  @Test
  void theLagOfWhatIsNotPausedLeavesThePausedTopicsOut() {
    append(onTopic("a", "billing.paused"));
    elapse(Duration.ofSeconds(60));
    append(onTopic("b", "order.created"));
    elapse(Duration.ofSeconds(30));
    assertThat(store.oldestPendingAge(Set.of("billing.paused"))).hasValueSatisfying(age ->
        assertThat(age).isBetween(Duration.ofSeconds(30), Duration.ofSeconds(30).plus(SLACK)));
    assertThat(store.oldestPendingAge(Set.of())).hasValueSatisfying(age ->
        assertThat(age).isBetween(Duration.ofSeconds(90), Duration.ofSeconds(90).plus(SLACK)));
    assertThat(store.oldestPendingAge(Set.of("billing.paused", "order.created"))).isEmpty();
  }

  // ---------------------------------------------------------------- concurrency

  /**
   * Several claiming dispatchers on their own threads, ordered mode, random transient failures: per
   * aggregate never two events in flight, successes in (createdAt, id) order, none twice.
   */
  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void concurrentClaimingDispatchersKeepPerAggregateOrder() throws Exception {
    concurrentOrderedDispatch(150, 12);
  }

  /** A few hot aggregates: claims take runs, and a failure inside a run must hold back the rest. */
  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void concurrentClaimingDispatchersKeepTheOrderOfHotAggregates() throws Exception {
    concurrentOrderedDispatch(5, 150);
  }

  private void concurrentOrderedDispatch(int aggregates, int perAggregate) throws Exception {
    int workers = 4;
    Map<String, List<UUID>> expected = new ConcurrentHashMap<>();
    List<OutboxEvent> all = new ArrayList<>();
    for (int n = 0; n < perAggregate; n++) {
      for (int a = 0; a < aggregates; a++) {
        OutboxEvent e = event("agg-" + a, ThreadLocalRandom.current().nextInt(3));
        all.add(e);
        expected.computeIfAbsent(e.aggregateId(), k -> Collections.synchronizedList(new ArrayList<>())).add(e.id());
      }
    }
    for (int i = 0; i < all.size(); i += 300) {
      append(all.subList(i, Math.min(all.size(), i + 300)));
    }

    Map<String, List<UUID>> delivered = new ConcurrentHashMap<>();
    Set<String> inFlight = ConcurrentHashMap.newKeySet();
    List<String> violations = new CopyOnWriteArrayList<>();
    AtomicInteger failures = new AtomicInteger();
    DispatchFn fn = e -> {
      if (!inFlight.add(e.aggregateId())) {
        violations.add("two events of " + e.aggregateId() + " in flight at once");
      }
      try {
        if (ThreadLocalRandom.current().nextInt(10) == 0) {
          failures.incrementAndGet();
          throw new IllegalStateException("transient");
        }
        delivered.computeIfAbsent(e.aggregateId(), k -> Collections.synchronizedList(new ArrayList<>())).add(e.id());
      } finally {
        inFlight.remove(e.aggregateId());
      }
    };

    ExecutorService pool = Executors.newFixedThreadPool(workers);
    AtomicBoolean done = new AtomicBoolean();
    List<Future<?>> futures = new ArrayList<>();
    for (int w = 0; w < workers; w++) {
      OutboxDispatcher d = dispatcher(fn).useClaim(true).preserveAggregateOrder(true).batchSize(50)
          .maxAttempts(1000).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(5)).name("w" + w).build();
      futures.add(pool.submit(() -> {
        while (!done.get()) {
          if (d.dispatchOnce().isEmpty()) {
            Thread.sleep(2);
          }
        }
        return null;
      }));
    }
    try {
      await().atMost(Duration.ofSeconds(100))
          .until(() -> dispatched(all.size()) == all.size());
    } finally {
      done.set(true);
      for (Future<?> f : futures) {
        f.get(30, TimeUnit.SECONDS);
      }
      pool.shutdownNow();
    }

    assertThat(violations).isEmpty();
    assertThat(failures.get()).as("the test injected failures").isPositive();
    assertThat(dispatched(all.size())).isEqualTo(all.size());
    assertThat(delivered.keySet()).hasSize(aggregates);
    for (Map.Entry<String, List<UUID>> e : expected.entrySet()) {
      assertThat(delivered.get(e.getKey())).as("deliveries of %s", e.getKey()).containsExactlyElementsOf(e.getValue());
    }
  }

  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void concurrentClaimsAreDisjoint() throws Exception {
    int total = 2000;
    List<OutboxEvent> all = new ArrayList<>();
    for (int i = 0; i < total; i++) {
      all.add(event("a" + (i % 97)));
    }
    for (int i = 0; i < total; i += 500) {
      append(all.subList(i, i + 500));
    }
    Map<UUID, AtomicInteger> publications = new ConcurrentHashMap<>();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    List<Future<?>> futures = new ArrayList<>();
    for (int w = 0; w < 4; w++) {
      OutboxDispatcher d = dispatcher(e -> publications.computeIfAbsent(e.id(), k -> new AtomicInteger()).incrementAndGet())
          .useClaim(true).batchSize(37).name("w" + w).build();
      futures.add(pool.submit(() -> {
        int emptyPolls = 0;
        while (emptyPolls < 3) {
          emptyPolls = d.dispatchOnce().isEmpty() ? emptyPolls + 1 : 0;
        }
        return null;
      }));
    }
    for (Future<?> f : futures) {
      f.get(100, TimeUnit.SECONDS);
    }
    pool.shutdownNow();
    assertThat(publications).hasSize(total);
    assertThat(publications.values().stream().filter(c -> c.get() != 1).collect(Collectors.toList()))
        .as("events published more than once without any fault").isEmpty();
    assertThat(dispatched(total)).isEqualTo(total);
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void asyncDispatcherDrainsTheStoreAndClosesCleanly() throws Exception {
    List<OutboxEvent> all = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      all.add(event("agg-" + (i % 20)));
    }
    append(all);
    Map<String, List<UUID>> delivered = new ConcurrentHashMap<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store)
        .dispatchFn(e -> delivered.computeIfAbsent(e.aggregateId(), k -> new CopyOnWriteArrayList<>()).add(e.id()))
        .useClaim(true).preserveAggregateOrder(true).workers(3).batchSize(25)
        .pollInterval(Duration.ofMillis(20)).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(50))
          .until(() -> dispatched(all.size()) == all.size());
    }
    assertThat(dispatched(300)).isEqualTo(300);
    for (int a = 0; a < 20; a++) {
      String agg = "agg-" + a;
      assertThat(delivered.get(agg)).containsExactlyElementsOf(
          all.stream().filter(e -> e.aggregateId().equals(agg)).map(OutboxEvent::id).toList());
    }
  }

  /**
   * Without claims a pipelined worker reads its next batch while the last one is still being published, and
   * in throughput mode two workers read in turns: every event still goes out once, and in ordered mode in
   * its aggregate's order.
   */
  @ParameterizedTest(name = "ordered: {0}, workers: {1}")
  @CsvSource({"false, 1", "true, 1", "false, 2"})
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void asyncDispatcherWithoutClaimsPublishesEachEventOnceAndInOrder(boolean ordered, int workers)
      throws Exception {
    List<OutboxEvent> all = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      all.add(event("agg-" + (i % 20)));
    }
    append(all);
    Map<UUID, AtomicInteger> publications = new ConcurrentHashMap<>();
    Map<String, List<UUID>> delivered = new ConcurrentHashMap<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> {
          publications.computeIfAbsent(e.id(), k -> new AtomicInteger()).incrementAndGet();
          delivered.computeIfAbsent(e.aggregateId(), k -> new CopyOnWriteArrayList<>()).add(e.id());
        }).useClaim(false).preserveAggregateOrder(ordered).workers(workers).pipelined(true).batchSize(15)
        .pollInterval(Duration.ofMillis(20)).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(50))
          .until(() -> dispatched(all.size()) == all.size());
    }
    assertThat(publications).hasSize(all.size());
    assertThat(publications.values().stream().filter(c -> c.get() != 1).toList())
        .as("events published more than once without any fault").isEmpty();
    if (ordered) {
      for (int a = 0; a < 20; a++) {
        String agg = "agg-" + a;
        assertThat(delivered.get(agg)).containsExactlyElementsOf(
            all.stream().filter(e -> e.aggregateId().equals(agg)).map(OutboxEvent::id).toList());
      }
    }
  }

  protected static Instant micros(Instant i) {
    return i.truncatedTo(ChronoUnit.MICROS);
  }

  protected static void assertCloseTo(Instant actual, Instant expected) {
    assertThat(actual.toEpochMilli()).isCloseTo(expected.toEpochMilli(), within(SLACK.toMillis()));
  }
}
