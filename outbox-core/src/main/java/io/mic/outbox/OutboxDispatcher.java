package io.mic.outbox;

import io.mic.outbox.internal.Backoff;
import io.mic.outbox.internal.ErrorText;
import io.mic.outbox.internal.Uninterruptibly;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox events one batch at a time, on the calling thread.
 *
 * <pre>{@code
 * OutboxDispatcher dispatcher = OutboxDispatcher.builder()
 *     .store(store)
 *     .dispatchFn(event -> broker.publish(event.topic(), event.payload()))
 *     .build();
 * DispatchResult result = dispatcher.dispatchOnce();
 * }</pre>
 *
 * <p>A batch is published in the store's order: event by event through a {@link DispatchFn}, wave by wave
 * through a {@link BatchDispatchFn}. Without claims each event (each wave) is marked right after its
 * publication. With claims ({@code useClaim(true)}), and in a pipelined {@link AsyncOutboxDispatcher} in
 * either mode, the successful events of a batch are marked together in one store call at the end of the
 * batch, which is what makes a SQL store fast; a crash before that mark republishes at most that batch.
 * Delivery is at-least-once in every mode.
 *
 * <p><b>Leases.</b> While a claimed batch is being published, a background timer renews the leases of
 * its unsettled events every third of {@code leaseTtl}, however long one publication takes, so no other
 * worker takes them over while this one is alive. When a renewal happened during the batch, the
 * successes so far are marked before the next publication. When the leases were last confirmed longer
 * ago than two renewal periods (the process was frozen), they are renewed before the next publication,
 * so a worker that wakes up after losing its batch does not publish it again.
 *
 * <p><b>Broker outages.</b> A publication that fails with {@link PublishUnavailableException} puts its
 * events back untried, without counting an attempt. A batch that published nothing for that reason makes
 * {@link AsyncOutboxDispatcher} wait before the next one, doubling the wait up to 30 s (with jitter);
 * the outage is logged once with its cause, then summarised at most every 30 s, and its end is logged.
 *
 * <p><b>Marks that fail.</b> A mark that throws (a connection reset, the first moments of a failover) is
 * tried again after 100 ms, 500 ms and 2 s ({@link #MARK_RETRY_PAUSES}), within 5 s of its first try
 * ({@link #MARK_RETRY_WINDOW}); only then does the batch give up, and its published events go out again
 * (at-least-once). A mark whose commit went through although its answer was lost finds its rows already
 * marked when tried again, and nothing goes out twice. They count as dispatched when the store holds them
 * {@code DISPATCHED} under the batch's claim (or without one); a deleting mark leaves no row, and a row gone
 * counts as dispatched without claims and as lease lost with them (see {@code withEarlierTries}).
 *
 * <p>Not thread-safe: one thread per instance. Use {@link AsyncOutboxDispatcher} for background workers.
 */
public final class OutboxDispatcher {
  public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(60);
  public static final int DEFAULT_BATCH_SIZE = 100;
  public static final int MAX_BATCH_SIZE = 10_000;
  public static final int DEFAULT_MAX_ATTEMPTS = 10;
  public static final int DEFAULT_AGGREGATE_RUN = 100;
  public static final Duration DEFAULT_RETRY_INITIAL = Duration.ofSeconds(1);
  public static final Duration DEFAULT_RETRY_MAX = Duration.ofMinutes(5);
  public static final String DEFAULT_NAME = "mic-outbox";
  /** The pauses before a failed mark is tried again; after the last one the batch gives up. */
  public static final List<Duration> MARK_RETRY_PAUSES =
      List.of(Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(2));
  /** No mark is tried again later than this after its first try. */
  public static final Duration MARK_RETRY_WINDOW = Duration.ofSeconds(5);

  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);

  private final OutboxStore store;
  private final DispatchFn dispatchFn;
  private final boolean useClaim;
  /** Marks a batch's successes together at its end, also without claims: the async dispatcher pipelines. */
  private final boolean markAtEnd;
  private final Duration leaseTtl;
  private final boolean ordered;
  private final int batchSize;
  private final int aggregateRun;
  private final int maxAttempts;
  private final Backoff backoff;
  private final OutboxListener listener;
  private final String worker;
  private final String ownerPrefix;
  private final AtomicLong claims = new AtomicLong();
  private final Set<String> pausedTopics;
  private final BrokerOutage outage;
  private volatile Publication current;
  /** The channel of a {@link BatchDispatchFn}, for this worker's batches ({@link #channel}). */
  private BatchChannel channel;

  OutboxDispatcher(DispatcherBuilder<?> b, String worker) {
    this(b, worker, Set.of(), false);
  }

  /**
   * {@code pausedTopics} is read at every poll; the async dispatcher shares one set between its workers.
   * {@code pipelined}: the caller reads each next batch with {@link #next(Collection)} while publishing, so
   * successes are marked by {@link Batch#finish()} in claim mode and without claims alike.
   */
  OutboxDispatcher(DispatcherBuilder<?> b, String worker, Set<String> pausedTopics, boolean pipelined) {
    this.pausedTopics = pausedTopics;
    this.store = b.store;
    this.dispatchFn = b.dispatchFn;
    this.useClaim = b.useClaim;
    this.markAtEnd = b.useClaim || pipelined;
    this.leaseTtl = b.leaseTtl;
    this.ordered = b.preserveAggregateOrder;
    this.batchSize = b.batchSize;
    this.aggregateRun = b.aggregateRun;
    this.maxAttempts = b.maxAttempts;
    this.backoff = b.backoff();
    this.listener = OutboxListeners.of(b.listener);
    this.worker = worker;
    this.outage = new BrokerOutage(worker, b.retryInitial, b.retryMax);
    this.ownerPrefix = worker + "@" + Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 16) + "#";
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Reads (or claims) one batch and publishes it.
   *
   * @return counts of what happened; {@link DispatchResult#isEmpty()} when nothing was due
   */
  public DispatchResult dispatchOnce() {
    Batch batch = next();
    if (batch == null) {
      return DispatchResult.EMPTY;
    }
    publish(batch);
    return batch.finish();
  }

  /**
   * Claims (or reads) the next batch and, in claim mode, starts keeping its leases alive at once, so a
   * batch claimed ahead of its publication keeps them too.
   *
   * @return {@code null} when nothing is due
   */
  Batch next() {
    return next(List.of(), null);
  }

  /**
   * {@link #next()} while the batches {@code inFlight} are still being published or marked: without claims
   * their events are still {@code PENDING}, so the read leaves them out (in claim mode their leases already do).
   * When {@code after} is not {@code null} the read goes on after it, the last event of the previous read
   * (throughput mode: {@link OutboxStore#fetchPendingAfter}, or {@link ClaimRequest#after}).
   */
  Batch next(Collection<Batch> inFlight, OutboxEvent after) {
    long start = System.nanoTime();
    List<OutboxEvent> events = fetch(inFlight, after);
    if (events.isEmpty()) {
      LOG.trace("{}: nothing due", worker);
      return null;
    }
    Batch batch = new Batch(events, start, after != null);
    if (useClaim) {
      batch.lease = LeaseKeeper.keep(store, events, leaseTtl, worker, start);
    }
    return batch;
  }

  /** Publishes a batch; in claim mode its successes are marked by {@link Batch#finish()}. */
  void publish(Batch batch) {
    send(batch);
    settle(batch);
  }

  /**
   * Sends a batch and returns before its last publication's outcomes are in, when the publisher can
   * ({@link BatchChannel}): {@link #settle} waits for them. A pipelined worker sends its next batch in between.
   * A batch whose send throws is finished.
   */
  void send(Batch batch) {
    try {
      batch.send();
    } catch (RuntimeException | Error e) {
      batch.finish();
      throw e;
    }
  }

  /** Waits for the outcomes of what {@link #send} sent and applies them. A batch whose settling throws is finished. */
  void settle(Batch batch) {
    try {
      batch.settle();
    } catch (RuntimeException | Error e) {
      batch.finish();
      throw e;
    }
    outage.record(batch.unavailable, batch.published.size() + batch.dispatched, batch.unavailableCause);
  }

  /** The channel of this worker's batches, opened on first use. */
  private BatchChannel channel(BatchDispatchFn batchFn) {
    if (channel == null) {
      channel = batchFn.channel();
    }
    return channel;
  }

  /** Whether this worker's batches go through a channel that returns before their outcomes are in. */
  boolean overlapping() {
    return channel != null && channel.overlapping();
  }

  /** Closes the channel of this worker's batches, once every batch sent was settled; opened again when needed. */
  void closeChannel() {
    BatchChannel open = channel;
    channel = null;
    if (open != null) {
      try {
        open.close();
      } catch (RuntimeException e) {
        LOG.debug("{}: closing the publisher's channel failed", worker, e);
      }
    }
  }

  /**
   * How long the worker should wait before its next batch because the broker was unavailable for the
   * whole last one; {@code null} when it may go on as usual.
   */
  Duration outagePause() {
    return outage.pause();
  }

  private static Set<UUID> idsOf(Collection<Batch> batches) {
    Set<UUID> ids = new HashSet<>();
    batches.forEach(b -> b.events.forEach(e -> ids.add(e.id())));
    return ids;
  }

  private static List<OutboxEvent> eventsOf(Collection<Batch> batches) {
    List<OutboxEvent> events = new ArrayList<>();
    batches.forEach(b -> events.addAll(b.events));
    return events;
  }

  private List<OutboxEvent> fetch(Collection<Batch> inFlight, OutboxEvent after) {
    PauseState shared = store.pauseState(); // the cluster-wide pauses, read at every poll
    if (shared.all()) {
      LOG.trace("{}: every topic paused in the store", worker);
      return List.of();
    }
    Set<String> paused = shared.topics().isEmpty() ? Set.copyOf(pausedTopics)
        : union(pausedTopics, shared.topics());
    if (!useClaim) {
      return after == null ? store.fetchPending(batchSize, ordered, paused, idsOf(inFlight))
          : store.fetchPendingAfter(after, batchSize, paused, eventsOf(inFlight));
    }
    String owner = ownerPrefix + claims.incrementAndGet();
    ClaimRequest request = ClaimRequest.of(owner, batchSize, leaseTtl).skipping(paused);
    return store.claim(ordered ? request.inRuns(aggregateRun) : request.after(after));
  }

  private static Set<String> union(Set<String> a, Set<String> b) {
    Set<String> all = new HashSet<>(a);
    all.addAll(b);
    return all;
  }

  /** The name used in lease owners and logs. */
  public String worker() {
    return worker;
  }

  /** The publication running now, for the stall watchdog; {@code null} between publications. */
  Publication current() {
    return current;
  }

  record Publication(OutboxEvent event, long startNanos) {}

  /** A chunk of a batch sent through the worker's channel, and its outcomes to come. */
  private record InFlight(List<OutboxEvent> events, BatchChannel.Sent sent) {}

  /** How a publication ended, decided in one place for both publisher shapes. */
  private enum Outcome {
    PUBLISHED, UNAVAILABLE, STOPPING, FAILED;

    static Outcome of(Exception error) {
      if (error == null) {
        return PUBLISHED;
      }
      if (error instanceof PublishUnavailableException) {
        return UNAVAILABLE;
      }
      if (error instanceof InterruptedException || Thread.currentThread().isInterrupted()) {
        return STOPPING; // close() interrupted the publisher
      }
      return FAILED;
    }
  }

  /**
   * One batch on its single publish path. The batch goes out in <i>waves</i>: in ordered mode the first
   * event of every aggregate, then the second ones, so two events of one aggregate are never in flight
   * together; otherwise one wave holds everything. A {@link BatchDispatchFn} gets each wave in one call; a
   * plain {@link DispatchFn} is a batch publisher of one event at a time. Successes of a claimed batch are
   * marked together at the end (and along the way when the batch runs long).
   */
  final class Batch {
    private final List<OutboxEvent> events;
    private final long startNanos;
    private final List<OutboxEvent> published = new ArrayList<>();
    private final Map<UUID, Long> publishNanos = new HashMap<>();
    /** Ordered mode: aggregates whose sequence stopped in this batch; their later events go back untried. */
    private final Set<List<String>> stopped = new HashSet<>();
    private final List<OutboxEvent> held = new ArrayList<>();
    private LeaseKeeper.Lease lease;
    private long flushedAtRenewal;
    private int dispatched;
    private int retried;
    private int dead;
    private int released;
    private int leaseLost;
    private int unavailable;
    private Exception unavailableCause;
    /** The chunk sent and not yet settled, with its outcomes to come; and its publication, for the watchdog. */
    private InFlight inFlight;
    private Publication publication;
    /** Whether the batch was read or claimed going on after the last one. */
    private final boolean goingOn;

    private Batch(List<OutboxEvent> events, long startNanos, boolean goingOn) {
      this.events = events;
      this.startNanos = startNanos;
      this.goingOn = goingOn;
    }

    int size() {
      return events.size();
    }

    /**
     * Whether more is probably waiting: the batch is full, or it went on after the last one and came back
     * short (its store may stop at the end of a priority), so the rest is before its place.
     */
    boolean moreWaiting(int batchSize) {
      return events.size() == batchSize || goingOn;
    }

    /** The last event read, the furthest in dispatch order. */
    OutboxEvent last() {
      return events.get(events.size() - 1);
    }

    /** Whether outcomes of what the batch sent are still to come: {@link OutboxDispatcher#settle} waits for them. */
    boolean awaitingOutcomes() {
      return inFlight != null;
    }

    /** Whether every event of the batch was marked dispatched; read once the batch is finished. */
    boolean allDispatched() {
      return dispatched == events.size();
    }

    /** Marks the successes, stops keeping the leases and reports the batch; once, on any thread. */
    DispatchResult finish() {
      try {
        flush();
      } finally {
        if (lease != null) {
          lease.close();
        }
      }
      DispatchResult result = result();
      listener.onBatch(result, Duration.ofNanos(System.nanoTime() - startNanos));
      LOG.debug("{}: {}", worker, result);
      return result;
    }

    /** A batch claimed ahead that will not be published (the dispatcher stops): back untried. */
    DispatchResult abandon() {
      if (useClaim) { // a batch read without claims took nothing
        release(events, "dispatcher stopping");
      }
      return finish();
    }

    /**
     * Publishes every chunk but the last, then sends the last; {@link #settle()} waits for its outcomes. A
     * chunk that stops the batch (broker down, dispatcher stopping) puts the chunks after it back untried.
     */
    private void send() {
      List<List<OutboxEvent>> chunks = chunks();
      for (int c = 0; c < chunks.size(); c++) {
        boolean last = c == chunks.size() - 1;
        if (!begin(chunks.get(c)) || !last && !end()) {
          List<OutboxEvent> rest = new ArrayList<>();
          chunks.subList(c + 1, chunks.size()).forEach(rest::addAll);
          boolean stopping = Thread.currentThread().isInterrupted();
          if (!stopping) {
            unavailable += rest.size(); // they wait for the broker too
          }
          release(rest, stopping ? "dispatcher stopping" : "broker unavailable");
          break;
        }
      }
    }

    /** Settles the chunk {@link #send()} left in flight, then puts back what an earlier failure held. */
    private void settle() {
      end();
      if (!held.isEmpty()) {
        release(held, "an earlier event of its aggregate did not go through");
      }
    }

    /** The waves, each split into single events for a plain {@link DispatchFn}. */
    private List<List<OutboxEvent>> chunks() {
      List<List<OutboxEvent>> waves = ordered ? DispatchOrder.waves(events) : List.of(events);
      if (dispatchFn instanceof BatchDispatchFn) {
        return waves;
      }
      List<List<OutboxEvent>> singles = new ArrayList<>();
      waves.forEach(wave -> wave.forEach(e -> singles.add(List.of(e))));
      return singles;
    }

    /**
     * Sends a chunk; its outcomes are settled by {@link #end()}.
     *
     * @return false when the batch must stop here: the broker is down or the dispatcher is stopping
     */
    private boolean begin(List<OutboxEvent> chunk) {
      if (lease != null) {
        lease.confirm(); // after a freeze, find out what was taken over before publishing it again
      }
      List<OutboxEvent> todo = new ArrayList<>();
      for (OutboxEvent event : chunk) {
        if (lease != null && lease.isLost(event)) {
          lost(event);
        } else if (ordered && stopped.contains(DispatchOrder.aggregateOf(event))) {
          held.add(event);
        } else if (useClaim && event.attempts() > maxAttempts) {
          dead(event, exhausted(event));
        } else {
          todo.add(event);
        }
      }
      if (todo.isEmpty()) {
        return true;
      }
      if (Thread.currentThread().isInterrupted()) {
        release(todo, "dispatcher stopping");
        return false;
      }
      publication = new Publication(todo.get(0), System.nanoTime());
      current = publication;
      try {
        inFlight = new InFlight(todo, send(todo));
      } catch (Exception e) {
        return failedAll(todo, e);
      } finally {
        current = null;
      }
      return true;
    }

    /**
     * Waits for the outcomes of the chunk {@link #begin} sent, if any, and applies them.
     *
     * @return false when the batch must stop here: the broker is down or the dispatcher is stopping
     */
    private boolean end() {
      InFlight chunk = inFlight;
      if (chunk == null) {
        return true;
      }
      inFlight = null;
      current = publication;
      Map<UUID, Exception> failures;
      try {
        failures = chunk.sent().outcomes();
      } catch (Exception e) {
        return failedAll(chunk.events(), e);
      } finally {
        current = null;
      }
      settle(chunk.events(), failures);
      return true;
    }

    /**
     * A failure of the whole chunk: back untried when the broker is down or the dispatcher stops (then
     * {@code false}: the batch stops), else an attempt failed for each event.
     */
    private boolean failedAll(List<OutboxEvent> todo, Exception e) {
      Outcome outcome = Outcome.of(e);
      if (outcome == Outcome.UNAVAILABLE || outcome == Outcome.STOPPING) {
        if (outcome == Outcome.STOPPING) {
          Thread.currentThread().interrupt();
        } else {
          unavailable(todo.size(), e);
        }
        release(todo, outcome == Outcome.STOPPING ? "dispatcher stopping" : "broker unavailable");
        return false;
      }
      Map<UUID, Exception> failures = new HashMap<>();
      for (OutboxEvent event : todo) {
        failures.put(event.id(), e);
      }
      settle(todo, failures);
      return true;
    }

    private BatchChannel.Sent send(List<OutboxEvent> todo) throws Exception {
      if (dispatchFn instanceof BatchDispatchFn batchFn) {
        return channel(batchFn).send(List.copyOf(todo));
      }
      dispatchFn.dispatch(todo.get(0));
      return Map::of;
    }

    /**
     * Applies each event's outcome: mark (now or with the batch), retry or DLQ, or release; in a long claimed
     * batch, marks what went out so far before a stall can cost it.
     */
    private void settle(List<OutboxEvent> todo, Map<UUID, Exception> failures) {
      settle(todo, failures, (System.nanoTime() - publication.startNanos()) / todo.size());
      if (lease != null && lease.renewals() != flushedAtRenewal) {
        flush();
      }
    }

    private void settle(List<OutboxEvent> todo, Map<UUID, Exception> failures, long nanosEach) {
      List<OutboxEvent> ok = new ArrayList<>();
      List<OutboxEvent> back = new ArrayList<>();
      List<OutboxEvent> stopping = new ArrayList<>();
      for (OutboxEvent event : todo) {
        Exception error = failures.get(event.id());
        switch (Outcome.of(error)) {
          case PUBLISHED -> {
            publishNanos.put(event.id(), nanosEach);
            ok.add(event);
          }
          case UNAVAILABLE -> {
            unavailable(1, error);
            back.add(event);
            stop(event);
          }
          case STOPPING -> { // not an outage: the broker may well be up
            stopping.add(event);
            stop(event);
          }
          case FAILED -> failed(event, error);
        }
      }
      if (markAtEnd) {
        published.addAll(ok);
      } else if (!ok.isEmpty()) {
        markDispatched(ok);
      }
      if (!back.isEmpty()) {
        release(back, "broker unavailable");
      }
      if (!stopping.isEmpty()) {
        Thread.currentThread().interrupt(); // kept for the caller, as a whole-chunk stop keeps it
        release(stopping, "dispatcher stopping");
      }
    }

    private void unavailable(int events, Exception cause) {
      unavailable += events;
      if (unavailableCause == null) {
        unavailableCause = cause;
      }
    }

    private String exhausted(OutboxEvent event) {
      return "claimed " + event.attempts() + " times without an outcome (maxAttempts " + maxAttempts
          + "): its worker probably crashed or stalled while publishing it";
    }

    private void stop(OutboxEvent event) {
      if (ordered) {
        stopped.add(DispatchOrder.aggregateOf(event));
      }
    }

    private void settling(Collection<OutboxEvent> settled) {
      if (lease != null) {
        lease.settle(settled);
      }
    }

    private void failed(OutboxEvent event, Exception error) {
      String text = ErrorText.of(error);
      int attempt = useClaim ? event.attempts() : event.attempts() + 1;
      if (attempt >= maxAttempts) {
        dead(event, text);
        return;
      }
      Duration delay = backoff.delay(attempt);
      stop(event); // a retry-waiting head blocks the rest of its aggregate
      settling(List.of(event));
      if (store.scheduleRetry(event, delay, text)) {
        retried++;
        LOG.debug("{}: event {} failed (attempt {}/{}), retry in {}: {}", worker, event.id(), attempt,
            maxAttempts, delay, text);
        listener.onRetryScheduled(event, delay, text);
      } else {
        lost(event);
      }
    }

    private void dead(OutboxEvent event, String error) {
      settling(List.of(event));
      if (store.markDead(event, error)) {
        dead++;
        LOG.warn("{}: event {} (topic {}, aggregate {}/{}) moved to the DLQ after {} attempts: {}", worker,
            event.id(), event.topic(), event.aggregateType(), event.aggregateId(),
            useClaim ? event.attempts() : event.attempts() + 1, error);
        listener.onDeadLettered(event, error);
      } else {
        lost(event);
      }
    }

    private void release(List<OutboxEvent> events, String reason) {
      List<OutboxEvent> ours = events.stream().filter(e -> lease == null || !lease.isLost(e)).toList();
      if (ours.isEmpty()) {
        return;
      }
      settling(ours);
      Set<UUID> ids = store.release(ours, backoff.initial());
      for (OutboxEvent e : ours) {
        if (ids.contains(e.id())) {
          released++;
          listener.onReleased(e, reason);
        } else {
          lost(e);
        }
      }
    }

    private void flush() {
      if (lease != null) {
        flushedAtRenewal = lease.renewals();
      }
      if (!published.isEmpty()) {
        List<OutboxEvent> marking = List.copyOf(published);
        published.clear();
        markDispatched(marking);
      }
    }

    private void markDispatched(List<OutboxEvent> events) {
      settling(events);
      Set<UUID> marked = markRetrying(events);
      for (OutboxEvent e : events) {
        if (marked.contains(e.id())) {
          dispatched++;
          listener.onDispatched(e, Duration.ofNanos(publishNanos.getOrDefault(e.id(), 0L)));
        } else {
          lost(e);
        }
      }
    }

    /**
     * The store's mark, tried again after each of {@link #MARK_RETRY_PAUSES} while it throws: giving up at once
     * would publish the whole batch again. Not after {@link #MARK_RETRY_WINDOW} (a database that takes its
     * connection timeout to fail is down, not blinking). A stop's interrupt does not cut the pauses short
     * (what went out is marked, as {@code stop()} promises); it is kept for the caller. With claims the
     * leases are renewed before each try, so that they do not run out while the mark waits.
     */
    private Set<UUID> markRetrying(List<OutboxEvent> events) {
      long first = System.nanoTime();
      RuntimeException failure = null;
      for (int attempt = 0; ; attempt++) {
        try {
          Set<UUID> marked = store.markDispatched(events);
          return attempt == 0 ? marked : withEarlierTries(events, marked);
        } catch (RuntimeException e) {
          if (failure == null) {
            failure = e;
          } else {
            failure.addSuppressed(e);
          }
          Duration pause = attempt < MARK_RETRY_PAUSES.size() ? MARK_RETRY_PAUSES.get(attempt) : null;
          if (pause == null || System.nanoTime() - first + pause.toNanos() > MARK_RETRY_WINDOW.toNanos()) {
            throw failure;
          }
          if (attempt == 0) {
            LOG.warn("{}: marking {} published events failed; trying again in {}: {}", worker, events.size(), pause,
                ErrorText.of(e));
          } else {
            LOG.debug("{}: marking {} published events failed again; trying again in {}", worker, events.size(),
                pause, e);
          }
          Uninterruptibly.sleepUntil(System.nanoTime() + pause.toNanos()); // a stop still lets it mark
          if (lease != null) {
            renewQuietly(events);
          }
        }
      }
    }

    /**
     * What a retry marked, and what an earlier try marked although its answer was lost: rows found
     * {@code DISPATCHED} under this batch's claim (none without claims). A deleting mark leaves no row to
     * find, and a new event may have been appended under its id since (another {@code createdAt}). Without
     * claims only a mark deletes a pending row, and only after its event was published (by this batch's
     * earlier try, or by another dispatcher that read it too), so a row gone counts as dispatched; with claims
     * another worker may have taken it over after its lease ran out: lease lost.
     */
    private Set<UUID> withEarlierTries(List<OutboxEvent> events, Set<UUID> marked) {
      Set<UUID> all = new HashSet<>(marked);
      for (OutboxEvent e : events) {
        if (!marked.contains(e.id())) {
          try {
            boolean markedEarlier = store.find(e.id()).filter(row -> Objects.equals(row.createdAt(), e.createdAt()))
                .map(row -> row.status() == OutboxStatus.DISPATCHED && Objects.equals(row.leaseOwner(), e.leaseOwner()))
                .orElse(e.leaseOwner() == null);
            if (markedEarlier) {
              all.add(e.id());
            }
          } catch (RuntimeException lookupFailed) {
            LOG.debug("{}: cannot tell whether event {} was marked by an earlier try", worker, e.id(), lookupFailed);
          }
        }
      }
      return all;
    }

    private void renewQuietly(List<OutboxEvent> events) {
      try {
        store.renewLeases(events, leaseTtl); // one taken over meanwhile fails its mark's fence: lease lost
      } catch (RuntimeException e) {
        LOG.debug("{}: renewing the leases of the events to mark failed too", worker, e);
      }
    }

    private void lost(OutboxEvent event) {
      stop(event);
      leaseLost++;
      LOG.debug("{}: lease on event {} lost; another worker owns it now", worker, event.id());
      listener.onLeaseLost(event);
    }

    DispatchResult result() {
      return new DispatchResult(events.size(), dispatched, retried, dead, released, leaseLost);
    }
  }

  /** Builds an {@link OutboxDispatcher}; see {@link DispatcherBuilder} for the options. */
  public static final class Builder extends DispatcherBuilder<Builder> {
    private Builder() {}

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public OutboxDispatcher build() {
      validate();
      return new OutboxDispatcher(this, name);
    }
  }
}
