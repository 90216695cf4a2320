package io.mic.outbox;

import io.mic.outbox.internal.Backoff;
import io.mic.outbox.internal.ErrorText;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
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
 * <p>A batch is published sequentially, in the store's order. Without claims each event is marked right
 * after its publication. With claims ({@code useClaim(true)}) the successful events of a batch are marked
 * together in one store call at the end of the batch (and whenever the lease is renewed), which is what
 * makes a SQL store fast; a crash before that mark republishes at most that batch. Delivery is
 * at-least-once in every mode.
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

  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);

  private final OutboxStore store;
  private final DispatchFn dispatchFn;
  private final boolean useClaim;
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
  private volatile Publication current;

  OutboxDispatcher(DispatcherBuilder<?> b, String worker) {
    this(b, worker, Set.of());
  }

  /** {@code pausedTopics} is read at every poll; the async dispatcher shares one set between its workers. */
  OutboxDispatcher(DispatcherBuilder<?> b, String worker, Set<String> pausedTopics) {
    this.pausedTopics = pausedTopics;
    this.store = b.store;
    this.dispatchFn = b.dispatchFn;
    this.useClaim = b.useClaim;
    this.leaseTtl = b.leaseTtl;
    this.ordered = b.preserveAggregateOrder;
    this.batchSize = b.batchSize;
    this.aggregateRun = b.aggregateRun;
    this.maxAttempts = b.maxAttempts;
    this.backoff = b.backoff();
    this.listener = OutboxListeners.of(b.listener);
    this.worker = worker;
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
    long start = System.nanoTime();
    List<OutboxEvent> batch = fetch();
    if (batch.isEmpty()) {
      LOG.trace("{}: nothing due", worker);
      return DispatchResult.EMPTY;
    }
    Run run = new Run(batch, start);
    try {
      run.publishAll();
    } finally {
      run.flush();
    }
    DispatchResult result = run.result();
    listener.onBatch(result, Duration.ofNanos(System.nanoTime() - start));
    LOG.debug("{}: {}", worker, result);
    return result;
  }

  private List<OutboxEvent> fetch() {
    Set<String> paused = Set.copyOf(pausedTopics);
    if (!useClaim) {
      return store.fetchPending(batchSize, ordered, paused);
    }
    String owner = ownerPrefix + claims.incrementAndGet();
    return ordered && aggregateRun > 1
        ? store.claimRuns(owner, batchSize, leaseTtl, aggregateRun, paused)
        : store.claim(owner, batchSize, leaseTtl, ordered, paused);
  }

  private static List<String> aggregateOf(OutboxEvent e) {
    return List.of(e.aggregateType(), e.aggregateId());
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

  /** One batch: publishes in order, keeps the tallies, and batches the marks of successful events. */
  private final class Run {
    private final List<OutboxEvent> batch;
    private final List<OutboxEvent> published = new ArrayList<>();
    private final Map<UUID, Long> publishNanos = new HashMap<>();
    /** Ordered mode: aggregates whose run stopped in this batch; their later events go back untried. */
    private final Set<List<String>> stopped = new HashSet<>();
    private final List<OutboxEvent> held = new ArrayList<>();
    private long leaseStart;
    private int dispatched;
    private int retried;
    private int dead;
    private int released;
    private int leaseLost;

    Run(List<OutboxEvent> batch, long start) {
      this.batch = new ArrayList<>(batch);
      this.leaseStart = start;
    }

    void publishAll() {
      if (dispatchFn instanceof BatchDispatchFn batchFn) {
        publishAtOnce(batchFn);
      } else {
        publishInTurn();
      }
      if (!held.isEmpty()) {
        release(held, "an earlier event of its aggregate did not go through");
      }
    }

    private void publishInTurn() {
      for (int i = 0; i < batch.size(); i++) {
        OutboxEvent event = batch.get(i);
        if (Thread.currentThread().isInterrupted()) {
          release(batch.subList(i, batch.size()), "dispatcher stopping");
          return;
        }
        if (useClaim && System.nanoTime() - leaseStart > leaseTtl.toNanos() / 2) {
          renewRemaining(i);
          event = batch.get(i);
        }
        if (useClaim && event.leaseOwner() == null) {
          continue; // its lease was lost while renewing: another worker has it now
        }
        if (isStopped(event)) {
          continue;
        }
        if (useClaim && event.attempts() > maxAttempts) {
          dead(event, exhausted(event));
          continue;
        }
        String stop = publish(event);
        if (stop != null) {
          release(batch.subList(i, batch.size()), stop);
          return;
        }
      }
    }

    /** In ordered mode, holds back an event whose predecessor in this batch did not go through. */
    private boolean isStopped(OutboxEvent event) {
      if (ordered && stopped.contains(aggregateOf(event))) {
        held.add(event);
        return true;
      }
      return false;
    }

    /** @return why the batch must stop here (this event and the rest go back untried), or null */
    private String publish(OutboxEvent event) {
      long t0 = System.nanoTime();
      current = new Publication(event, t0);
      try {
        dispatchFn.dispatch(event);
      } catch (PublishUnavailableException e) {
        LOG.warn("{}: broker unavailable while publishing event {}; batch released without counting an"
            + " attempt: {}", worker, event.id(), ErrorText.of(e));
        return "broker unavailable";
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return "dispatcher stopping";
      } catch (Exception e) {
        if (Thread.currentThread().isInterrupted()) {
          return "dispatcher stopping"; // the publisher failed because close() interrupted it
        }
        failed(event, e);
        return null;
      } finally {
        current = null;
      }
      publishNanos.put(event.id(), System.nanoTime() - t0);
      if (useClaim) {
        published.add(event);
      } else {
        markDispatched(List.of(event));
      }
      return null;
    }

    private String exhausted(OutboxEvent event) {
      return "claimed " + event.attempts() + " times without an outcome (maxAttempts " + maxAttempts
          + "): its worker probably crashed or stalled while publishing it";
    }

    /**
     * The batch through a {@link BatchDispatchFn}, in waves: all first events of their aggregate, then all
     * second ones, so a run is never published concurrently. Without ordering, one wave holds everything.
     */
    private void publishAtOnce(BatchDispatchFn batchFn) {
      List<List<OutboxEvent>> waves = new ArrayList<>();
      Map<List<String>, Integer> positions = new HashMap<>();
      for (OutboxEvent event : batch) {
        int position = ordered ? positions.merge(aggregateOf(event), 1, Integer::sum) - 1 : 0;
        while (waves.size() <= position) {
          waves.add(new ArrayList<>());
        }
        waves.get(position).add(event);
      }
      for (int w = 0; w < waves.size(); w++) {
        if (!publishWave(batchFn, waves.get(w))) {
          waves.subList(w + 1, waves.size()).forEach(rest -> release(rest, "broker unavailable"));
          return;
        }
      }
    }

    /** @return false when the batch must stop (broker unavailable or dispatcher stopping) */
    private boolean publishWave(BatchDispatchFn batchFn, List<OutboxEvent> wave) {
      List<OutboxEvent> todo = new ArrayList<>();
      for (OutboxEvent event : wave) {
        if (isStopped(event)) {
          continue;
        }
        if (useClaim && event.attempts() > maxAttempts) {
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
      long t0 = System.nanoTime();
      current = new Publication(todo.get(0), t0);
      Map<UUID, Exception> failures;
      try {
        failures = batchFn.dispatchBatch(List.copyOf(todo));
      } catch (PublishUnavailableException e) {
        LOG.warn("{}: broker unavailable while publishing a batch of {}; released without counting an"
            + " attempt: {}", worker, todo.size(), ErrorText.of(e));
        release(todo, "broker unavailable");
        return false;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        release(todo, "dispatcher stopping");
        return false;
      } catch (Exception e) {
        if (Thread.currentThread().isInterrupted()) {
          release(todo, "dispatcher stopping");
          return false;
        }
        failures = new HashMap<>();
        for (OutboxEvent event : todo) {
          failures.put(event.id(), e);
        }
      } finally {
        current = null;
      }
      long perEvent = (System.nanoTime() - t0) / todo.size();
      List<OutboxEvent> unavailable = new ArrayList<>();
      for (OutboxEvent event : todo) {
        Exception error = failures.get(event.id());
        if (error == null) {
          publishNanos.put(event.id(), perEvent);
          published.add(event);
        } else if (error instanceof PublishUnavailableException) {
          unavailable.add(event);
          stop(event);
        } else {
          failed(event, error);
        }
      }
      if (!unavailable.isEmpty()) {
        LOG.warn("{}: broker unavailable for {} of {} events; released without counting an attempt", worker,
            unavailable.size(), todo.size());
        release(unavailable, "broker unavailable");
      }
      return true;
    }

    private void stop(OutboxEvent event) {
      if (ordered) {
        stopped.add(aggregateOf(event));
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
      stop(event); // a retry-waiting head blocks the rest of its run
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
      List<OutboxEvent> held = events.stream().filter(e -> !useClaim || e.leaseOwner() != null).toList();
      Set<UUID> ids = store.release(held, backoff.initial());
      for (OutboxEvent e : held) {
        if (ids.contains(e.id())) {
          released++;
          listener.onReleased(e, reason);
        } else {
          lost(e);
        }
      }
    }

    /** Marks what was published so far and extends the lease of the rest of the batch. */
    private void renewRemaining(int from) {
      flush();
      List<OutboxEvent> remaining = batch.subList(from, batch.size());
      Set<UUID> renewed = store.renewLeases(remaining, leaseTtl);
      leaseStart = System.nanoTime();
      for (int i = from; i < batch.size(); i++) {
        OutboxEvent e = batch.get(i);
        if (!renewed.contains(e.id())) {
          lost(e);
          batch.set(i, e.withState(e.status(), e.attempts(), e.createdAt(), e.nextAttemptAt(), e.lastError(),
              null, null, e.dispatchedAt()));
        }
      }
    }

    void flush() {
      if (!published.isEmpty()) {
        markDispatched(List.copyOf(published));
        published.clear();
      }
    }

    private void markDispatched(List<OutboxEvent> events) {
      Set<UUID> marked = store.markDispatched(events);
      for (OutboxEvent e : events) {
        if (marked.contains(e.id())) {
          dispatched++;
          listener.onDispatched(e, Duration.ofNanos(publishNanos.getOrDefault(e.id(), 0L)));
        } else {
          lost(e);
        }
      }
    }

    private void lost(OutboxEvent event) {
      stop(event);
      leaseLost++;
      LOG.debug("{}: lease on event {} lost; another worker owns it now", worker, event.id());
      listener.onLeaseLost(event);
    }

    DispatchResult result() {
      return new DispatchResult(batch.size(), dispatched, retried, dead, released, leaseLost);
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
