package io.mic.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Background workers that poll the store and publish, each publishing its own batches.
 *
 * <pre>{@code
 * AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder()
 *     .store(store).dispatchFn(publisher)
 *     .useClaim(true).preserveAggregateOrder(true)
 *     .workers(4).pollInterval(Duration.ofMillis(200))
 *     .build();
 * dispatcher.start();
 * // after a commit that appended events:
 * dispatcher.wakeUp();
 * // on shutdown:
 * dispatcher.close();
 * }</pre>
 *
 * <p>A worker that fetched a full batch (or a read going on after the last one that came back short) polls
 * again at once; otherwise it sleeps {@code pollInterval} or
 * until {@link #wakeUp()}, which the store also calls when another process commits events if it can tell
 * ({@link OutboxStore#subscribeToAppends}; the JDBC store on PostgreSQL with {@code notifyOnAppend(true)}).
 * After a batch that the broker could not take at all, it waits instead, from
 * {@code retryBackoff}'s initial delay doubling up to 30 s, and wake-ups do not cut that wait short. A failing poll (database down) is logged, reported to
 * {@link OutboxListener#onPollFailed} and retried; a worker never dies of it.
 *
 * <p><b>Stalled publications.</b> A watchdog checks the workers; a publication running longer than half
 * the lease is logged at WARN with the worker's stack trace and reported to
 * {@link OutboxListener#onPublishStalled}. The batch keeps its lease meanwhile (see {@link OutboxDispatcher});
 * give your {@link DispatchFn} a timeout all the same, since a publication that never returns holds its
 * events until {@link #stop()} or {@link #close()}.
 *
 * <p>{@link #close()} ends it in stages, as {@link #stop()} describes; only an executor the dispatcher created
 * itself is shut down.
 */
public final class AsyncOutboxDispatcher implements AutoCloseable {
  public static final int DEFAULT_WORKERS = 1;
  public static final boolean DEFAULT_PIPELINED = true;
  public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(200);
  public static final Duration DEFAULT_SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
  /** How long a failing poll waits at least before the next try, so a database outage is not hammered. */
  public static final Duration POLL_FAILURE_PAUSE = Duration.ofSeconds(1);
  /** How long {@link #stop()} waits, after interrupting the workers, for them to end and their last marks. */
  private static final Duration STOP_GRACE = Duration.ofSeconds(5);

  private static final Logger LOG = LoggerFactory.getLogger(AsyncOutboxDispatcher.class);

  private final String name;
  private final Duration pollInterval;
  private final Duration shutdownTimeout;
  private final OutboxStore store;
  private final List<Worker> workers;
  private final Set<String> pausedTopics = ConcurrentHashMap.newKeySet();
  private final ReadCursor cursor;
  private final RunState state = new RunState();
  private final Watchdog watchdog;
  /** The application's executor, or {@code null}: then each {@link #start()} creates one of its own. */
  private final ExecutorService usersExecutor;
  private ExecutorService executor;
  private OutboxStore.Subscription appends;
  private CountDownLatch finished = new CountDownLatch(0);
  /** Workers running now, of any start: one whose publication ignored stop()'s interrupt may outlive it. */
  private final AtomicInteger liveWorkers = new AtomicInteger();
  private final List<Future<?>> futures = new ArrayList<>();
  private boolean started;
  private boolean closed;

  private AsyncOutboxDispatcher(Builder b) {
    this.name = b.name;
    this.pollInterval = b.pollInterval;
    this.shutdownTimeout = b.shutdownTimeout;
    this.store = b.store;
    this.workers = IntStream.rangeClosed(1, b.workers)
        .mapToObj(i -> new Worker(b, name + "-dispatcher-" + i, pausedTopics, b.pollInterval, b.pipelined)).toList();
    this.cursor = new ReadCursor(b.useClaim, b.preserveAggregateOrder, pollInterval);
    this.watchdog = new Watchdog(workers.stream().map(Worker::channel).toList(), b.leaseTtl,
        OutboxListeners.of(b.listener));
    this.usersExecutor = b.executor;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Starts the workers and the watchdog, and subscribes to the store's appends; again after {@link #stop()}.
   *
   * @throws IllegalStateException after {@link #close()}, or while a worker of the last start still runs:
   *     {@link #stop()} gave up on it (a publication that ignored the interrupt, or its last marks)
   */
  public synchronized void start() {
    if (closed) {
      throw new IllegalStateException(name + " is closed; build a new dispatcher");
    }
    if (started) {
      return;
    }
    int live = liveWorkers.get();
    if (live > 0) {
      throw new IllegalStateException(name + ": " + live + " worker(s) of the last start still run (a"
          + " publication that ignored stop()'s interrupt, or its last marks); start again once they ended");
    }
    appends = store.subscribeToAppends(this::wakeUp).orElse(null); // first: a store that refuses starts nothing
    started = true;
    int generation = state.start();
    CountDownLatch done = new CountDownLatch(workers.size());
    finished = done;
    futures.clear();
    int submitted = 0;
    try {
      executor = usersExecutor != null ? usersExecutor
          : Executors.newFixedThreadPool(workers.size(), DaemonThreads.named(name + "-dispatcher-"));
      for (int i = 0; i < workers.size(); i++) {
        int index = i;
        futures.add(executor.submit(() -> runWorker(index, generation, done)));
        submitted++;
      }
      watchdog.start(name);
    } catch (RuntimeException | Error e) { // e.g. the application's executor refused a worker
      for (int i = submitted; i < workers.size(); i++) {
        done.countDown();
      }
      stop();
      throw e;
    }
    LOG.info("{}: started {} worker(s), poll interval {}{}", name, workers.size(), pollInterval,
        appends == null ? "" : ", woken up by commits of other processes");
  }

  /** Wakes idle workers now, e.g. right after a transaction that appended events committed. */
  public void wakeUp() {
    state.waiter().wakeAll();
  }

  /**
   * Stops claiming new batches until {@link #resume()}; batches in flight finish normally. Committed events
   * stay in the store and are dispatched after the resume; a paused dispatcher loses nothing.
   */
  public void pause() {
    if (state.pause(true)) {
      LOG.info("{}: paused", name);
    }
  }

  /**
   * Stops dispatching events of one topic: claims and reads skip them in the store itself, so a paused
   * backlog costs nothing, and in ordered mode a paused event at the head of its aggregate keeps blocking
   * the aggregate. Events in flight finish. The store must support paused topics (the in-memory and
   * JDBC stores do).
   */
  public void pause(String topic) {
    if (pausedTopics.add(Objects.requireNonNull(topic, "topic"))) {
      LOG.info("{}: topic {} paused", name, topic);
    }
  }

  /** Dispatches the topic again, at once. */
  public void resume(String topic) {
    if (pausedTopics.remove(topic)) {
      LOG.info("{}: topic {} resumed", name, topic);
      cursor.readFromTheStart(); // its events may come before the place the reads went on from
      wakeUp();
    }
  }

  public Set<String> pausedTopics() {
    return Set.copyOf(pausedTopics);
  }

  /** Resumes polling at once after {@link #pause()}. */
  public void resume() {
    if (state.pause(false)) {
      LOG.info("{}: resumed", name);
      wakeUp();
    }
  }

  public boolean isPaused() {
    return state.paused();
  }

  /** {@link #stop()}, for good: a closed dispatcher does not start again. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    stop();
  }

  /**
   * What {@link #close()} does, after which {@link #start()} starts again: for a container that stops and
   * starts its components (a Spring context's {@code stop()} and {@code start()}, a checkpoint and restore).
   * Stops polling, lets each worker finish its batch within {@code shutdownTimeout}, then interrupts the
   * stragglers, whose unpublished events go back untried without counting an attempt; the marks of what went
   * out finish before it returns (for 5 s at most after the interrupt). A paused dispatcher stays paused.
   * Nothing happens when it is not running.
   */
  public synchronized void stop() {
    if (!started) {
      return;
    }
    started = false;
    long deadline = System.nanoTime() + shutdownTimeout.toNanos() + STOP_GRACE.toNanos();
    state.stop(deadline);
    if (appends != null) {
      try {
        appends.close(); // first: no wake-up is needed while stopping
      } catch (RuntimeException e) {
        LOG.debug("{}: ending the subscription to appends failed", name, e);
      }
      appends = null;
    }
    wakeUp();
    try {
      if (!finished.await(shutdownTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn("{}: workers still publishing after {}; interrupting them (their remaining events are"
            + " released untried)", name, shutdownTimeout);
        futures.forEach(f -> f.cancel(true));
        if (!finished.await(deadline - System.nanoTime(), TimeUnit.NANOSECONDS)) {
          LOG.warn("{}: a worker did not end within {} of its interrupt; its events return when their lease"
              + " expires", name, STOP_GRACE);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      LOG.warn("{}: interrupted while waiting for workers to finish", name);
    } finally {
      watchdog.stop();
      if (executor != null && executor != usersExecutor) {
        executor.shutdownNow();
      }
      executor = null;
    }
    LOG.info("{}: stopped", name);
  }

  private void runWorker(int index, int generation, CountDownLatch done) {
    if (!state.isCurrent(generation)) {
      done.countDown(); // a task of an earlier start that ran only now
      return;
    }
    liveWorkers.incrementAndGet();
    try {
      watchdog.entered(index);
      workers.get(index).run(state, generation, cursor);
    } finally {
      watchdog.left(index);
      liveWorkers.decrementAndGet();
      done.countDown();
    }
  }

  /** Builds an {@link AsyncOutboxDispatcher}; shared options are documented on {@link DispatcherBuilder}. */
  public static final class Builder extends DispatcherBuilder<Builder> {
    private int workers = DEFAULT_WORKERS;
    private Duration pollInterval = DEFAULT_POLL_INTERVAL;
    private Duration shutdownTimeout = DEFAULT_SHUTDOWN_TIMEOUT;
    private ExecutorService executor;
    private boolean pipelined = DEFAULT_PIPELINED;

    private Builder() {}

    /**
     * Let each worker claim (or, without claims, read) its next batch and mark its last one in the background
     * while it publishes the current one (default {@value AsyncOutboxDispatcher#DEFAULT_PIPELINED}): database
     * and broker round trips overlap. Without claims the read and the mark run at once, on connections of their
     * own; the read leaves out the events still being published or marked, which are {@code PENDING} until
     * their mark, and the batch is marked at its end as in claim mode.
     *
     * <p>It stays an option because it is a trade a deployment makes, not a strategy the library could pick: a
     * crash republishes at most two batches per worker instead of one (three in throughput mode through a
     * publisher that sends its next batch while the last one's acknowledgements arrive, NATS's), and a worker
     * holds up to two database connections instead of one. {@code false} suits a small connection pool or
     * consumers that pay for each duplicate more than for the throughput.
     */
    public Builder pipelined(boolean pipelined) {
      this.pipelined = pipelined;
      return this;
    }

    /**
     * Worker threads (default 1), each publishing its own batches. Without claims the workers take turns
     * reading, each read leaving out every batch in flight in this dispatcher, so several workers of one
     * dispatcher never publish the same event; several processes, or ordered mode with more than one
     * worker, need {@code useClaim(true)}. With claims the workers claim at once, kept apart by the claims.
     */
    public Builder workers(int workers) {
      this.workers = workers;
      return this;
    }

    /** Sleep between polls that found less than a full batch (default 200 ms). */
    public Builder pollInterval(Duration pollInterval) {
      this.pollInterval = pollInterval;
      return this;
    }

    /**
     * How long {@link #stop()} and {@link #close()} wait for in-flight batches before interrupting them
     * (default 30 s); then 5 s more for the workers to end and their last marks.
     */
    public Builder shutdownTimeout(Duration shutdownTimeout) {
      this.shutdownTimeout = shutdownTimeout;
      return this;
    }

    /**
     * Runs the workers on your executor, which must have a thread free for each worker for as long as the
     * dispatcher runs; it is not shut down by {@link #stop()} or {@link #close()}. By default each start
     * creates named daemon threads of the dispatcher's own.
     */
    public Builder executor(ExecutorService executor) {
      this.executor = executor;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public AsyncOutboxDispatcher build() {
      validate();
      require(workers >= 1 && workers <= 256, "workers must be between 1 and 256, was " + workers);
      require(pollInterval != null && !pollInterval.isNegative() && !pollInterval.isZero(),
          "pollInterval must be > 0, was " + pollInterval);
      require(shutdownTimeout != null && !shutdownTimeout.isNegative(),
          "shutdownTimeout must be >= 0, was " + shutdownTimeout);
      require(workers == 1 || useClaim || !preserveAggregateOrder, "preserveAggregateOrder(true) with workers("
          + workers + ") requires useClaim(true): without claims two workers can publish events of one"
          + " aggregate at the same time and out of order");
      return new AsyncOutboxDispatcher(this);
    }
  }
}
