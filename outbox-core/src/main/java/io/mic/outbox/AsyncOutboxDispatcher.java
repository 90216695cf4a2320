package io.mic.outbox;

import io.mic.outbox.OutboxDispatcher.Publication;
import io.mic.outbox.internal.Uninterruptibly;
import io.mic.outbox.internal.Waiter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Background workers that poll the store and publish, each running its own {@link OutboxDispatcher}.
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
 * <p>{@link #close()} stops polling, lets each worker finish its batch within {@code shutdownTimeout}, then
 * interrupts the stragglers: a worker interrupted between publications releases the rest of its batch
 * without counting an attempt. Only an executor the dispatcher created itself is shut down.
 * {@link #stop()} does the same and lets {@link #start()} start again, for containers that stop and start
 * their components.
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
  private final int batchSize;
  private final Duration leaseTtl;
  private final Duration pollInterval;
  private final Duration shutdownTimeout;
  private final boolean pipelined;
  private final boolean useClaim;
  private final boolean ordered;
  private final OutboxListener listener;
  private final List<OutboxDispatcher> dispatchers;
  /** The application's executor, or {@code null}: then each {@link #start()} creates one of its own. */
  private final ExecutorService usersExecutor;
  private ExecutorService executor;
  private final Waiter waiter = new Waiter();
  private final OutboxStore store;
  private OutboxStore.Subscription appends;
  /** Counts down as the workers of the last start end. */
  private CountDownLatch finished = new CountDownLatch(0);
  /** Workers running now, of any start: one whose publication ignored stop()'s interrupt may outlive it. */
  private final AtomicInteger liveWorkers = new AtomicInteger();
  /** Counts the starts; a worker task of an earlier one that runs late ends at once. */
  private volatile int starts;
  /** When the running {@link #stop()} gives up, in {@link System#nanoTime()}; last marks may wait until then. */
  private volatile long stopDeadline;
  private final List<Future<?>> futures = new ArrayList<>();
  private final Publication[] reportedStalls;
  /** Each worker's thread while it runs, read by the watchdog's thread. */
  private final AtomicReferenceArray<Thread> threads;
  private ScheduledExecutorService watchdog;
  private volatile boolean running;
  private volatile boolean paused;
  private final Set<String> pausedTopics = ConcurrentHashMap.newKeySet();
  private final Reads reads;
  private boolean started;
  private boolean closed;

  private AsyncOutboxDispatcher(Builder b) {
    this.name = b.name;
    this.batchSize = b.batchSize;
    this.leaseTtl = b.leaseTtl;
    this.pollInterval = b.pollInterval;
    this.shutdownTimeout = b.shutdownTimeout;
    this.pipelined = b.pipelined;
    this.useClaim = b.useClaim;
    this.ordered = b.preserveAggregateOrder;
    this.listener = OutboxListeners.of(b.listener);
    this.store = b.store;
    List<OutboxDispatcher> list = new ArrayList<>();
    for (int i = 1; i <= b.workers; i++) {
      list.add(new OutboxDispatcher(b, name + "-dispatcher-" + i, pausedTopics, pipelined));
    }
    this.dispatchers = List.copyOf(list);
    this.usersExecutor = b.executor;
    this.reportedStalls = new Publication[b.workers];
    this.threads = new AtomicReferenceArray<>(b.workers);
    this.reads = new Reads();
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
    running = true;
    int generation = ++starts;
    CountDownLatch done = new CountDownLatch(dispatchers.size());
    finished = done;
    futures.clear();
    int submitted = 0;
    try {
      executor = usersExecutor != null ? usersExecutor
          : Executors.newFixedThreadPool(dispatchers.size(), namedThreads(name + "-dispatcher-"));
      for (int i = 0; i < dispatchers.size(); i++) {
        int index = i;
        futures.add(executor.submit(() -> runWorker(index, generation, done)));
        submitted++;
      }
      watchdog = Executors.newSingleThreadScheduledExecutor(namedThreads(name + "-watchdog-"));
      long period = Math.max(50, Math.min(leaseTtl.toMillis() / 4, 5_000));
      watchdog.scheduleAtFixedRate(this::checkStalls, period, period, TimeUnit.MILLISECONDS);
    } catch (RuntimeException | Error e) { // e.g. the application's executor refused a worker
      for (int i = submitted; i < dispatchers.size(); i++) {
        done.countDown();
      }
      stop();
      throw e;
    }
    LOG.info("{}: started {} worker(s), poll interval {}{}", name, dispatchers.size(), pollInterval,
        appends == null ? "" : ", woken up by commits of other processes");
  }

  /** Wakes idle workers now, e.g. right after a transaction that appended events committed. */
  public void wakeUp() {
    waiter.wakeAll();
  }

  /**
   * Stops claiming new batches until {@link #resume()}; batches in flight finish normally. Committed events
   * stay in the store and are dispatched after the resume; a paused dispatcher loses nothing.
   */
  public void pause() {
    if (!paused) {
      paused = true;
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
      reads.readFromTheStart(); // its events may come before the place the reads went on from
      waiter.wakeAll();
    }
  }

  /** The topics paused now. */
  public Set<String> pausedTopics() {
    return Set.copyOf(pausedTopics);
  }

  /** Resumes polling at once after {@link #pause()}. */
  public void resume() {
    if (paused) {
      paused = false;
      LOG.info("{}: resumed", name);
      waiter.wakeAll();
    }
  }

  public boolean isPaused() {
    return paused;
  }

  /**
   * Stops polling, lets in-flight batches finish within the shutdown timeout, then releases threads; for good.
   */
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
   * stragglers, whose unpublished events go back untried; the marks of what went out finish before it
   * returns (for 5 s at most after the interrupt). A paused dispatcher stays paused. Nothing happens when it
   * is not running.
   */
  public synchronized void stop() {
    if (!started) {
      return;
    }
    started = false;
    stopDeadline = System.nanoTime() + shutdownTimeout.toNanos() + STOP_GRACE.toNanos();
    running = false;
    if (appends != null) {
      try {
        appends.close(); // first: no wake-up is needed while stopping
      } catch (RuntimeException e) {
        LOG.debug("{}: ending the subscription to appends failed", name, e);
      }
      appends = null;
    }
    waiter.wakeAll();
    try {
      if (!finished.await(shutdownTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
        LOG.warn("{}: workers still publishing after {}; interrupting them (their remaining events are"
            + " released untried)", name, shutdownTimeout);
        futures.forEach(f -> f.cancel(true));
        if (!finished.await(stopDeadline - System.nanoTime(), TimeUnit.NANOSECONDS)) {
          LOG.warn("{}: a worker did not end within {} of its interrupt; its events return when their lease"
              + " expires", name, STOP_GRACE);
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      LOG.warn("{}: interrupted while waiting for workers to finish", name);
    } finally {
      if (watchdog != null) {
        watchdog.shutdownNow();
        watchdog = null;
      }
      if (executor != null && executor != usersExecutor) {
        executor.shutdownNow();
      }
      executor = null;
    }
    LOG.info("{}: stopped", name);
  }

  private void runWorker(int index, int generation, CountDownLatch done) {
    if (generation != starts) {
      done.countDown(); // a task of an earlier start that ran only now
      return;
    }
    liveWorkers.incrementAndGet();
    OutboxDispatcher dispatcher = dispatchers.get(index);
    Pipeline pipeline = null;
    try {
      threads.set(index, Thread.currentThread());
      pipeline = new Pipeline(dispatcher, index);
      boolean failing = false;
      while (running && generation == starts) {
        long seen = waiter.generation();
        if (paused) {
          pipeline.settleQuietly();
          pipeline.abandonClaimedAhead();
          awaitQuietly(dispatcher, seen, pollInterval, () -> !running || !paused);
          continue;
        }
        Duration pause = pollInterval;
        try {
          boolean more = pipeline.dispatchOnce();
          if (failing) {
            LOG.info("{}: polling works again", dispatcher.worker());
            failing = false;
          }
          Duration outage = dispatcher.outagePause();
          if (outage != null) {
            sleepQuietly(dispatcher, outage); // the broker is down: wake-ups would only spin
            continue;
          }
          if (more) {
            continue;
          }
        } catch (RuntimeException | Error e) {
          if (!running) {
            break;
          }
          if (!failing) {
            LOG.warn("{}: poll failed; retrying every {} until it works", dispatcher.worker(),
                max(pollInterval, POLL_FAILURE_PAUSE), e);
          } else {
            LOG.debug("{}: poll failed again", dispatcher.worker(), e);
          }
          failing = true;
          listener.onPollFailed(e);
          pause = max(pollInterval, POLL_FAILURE_PAUSE);
        }
        if (Thread.interrupted() && running) {
          LOG.error("{}: interrupted while running; interrupts are reserved for stop() and close(), polling"
              + " goes on", dispatcher.worker());
        }
        awaitQuietly(dispatcher, seen, pause, () -> !running);
      }
    } finally {
      if (pipeline != null) {
        pipeline.close();
      }
      threads.set(index, null);
      liveWorkers.decrementAndGet();
      done.countDown();
    }
  }

  /**
   * One worker's batches. Pipelined, a worker publishes batch N while its background threads mark batch N-1
   * and claim (or read) batch N+1 (only when more is probably waiting: after a full batch), so database round
   * trips overlap broker round trips. Without claims the read and the mark run at once, each on a thread of
   * its own: the mark's commit waits for the database's log flush, and the read works meanwhile; the read
   * leaves out every batch in flight ({@link Reads}), whose events stay {@code PENDING} until their marks
   * commit. With claims one thread claims after it marked: a claim beside a mark, two updates of the same
   * index pages, measured slower. A worker that published a batch waits for the mark of the batch before: at
   * most one mark and one batch claimed ahead wait at any time, so a worker has published and not marked at
   * most two batches (what a crash may repeat). In throughput mode, through a {@link BatchChannel} that
   * returns before a batch's outcomes are in, a worker sends its next batch before it settles the last one,
   * so the broker's window does not run dry between batches; it has then published and not marked at most
   * three. Without pipelining each step waits for the last.
   */
  private final class Pipeline {
    private final OutboxDispatcher dispatcher;
    private final ExecutorService reader;
    private final ExecutorService marker;
    private Future<OutboxDispatcher.Batch> ahead;
    /**
     * In throughput mode, the batch sent last, whose last outcomes may still be arriving: settled after the
     * next batch went out, so that the publisher's window does not run dry between batches.
     */
    private OutboxDispatcher.Batch sent;
    /** The mark of the batch settled last, running in the background. */
    private Future<?> marking;

    Pipeline(OutboxDispatcher dispatcher, int index) {
      this.dispatcher = dispatcher;
      String prefix = name + "-dispatcher-" + (index + 1);
      this.reader = pipelined ? Executors.newSingleThreadExecutor(namedThreads(prefix + "-read-")) : null;
      this.marker = !pipelined ? null
          : useClaim ? reader : Executors.newSingleThreadExecutor(namedThreads(prefix + "-mark-"));
    }

    /** @return whether more is probably waiting ({@link OutboxDispatcher.Batch#moreWaiting}) */
    boolean dispatchOnce() {
      OutboxDispatcher.Batch batch;
      try {
        batch = ahead != null ? take() : reads.next(dispatcher);
      } catch (RuntimeException | Error e) {
        settleAfter(e); // the read failed: what went out is settled and marked all the same
        throw e;
      }
      if (batch == null) {
        settleSent();
        return false;
      }
      boolean more = batch.moreWaiting(batchSize);
      if (reader == null) {
        try {
          dispatcher.publish(batch);
          batch.finish();
        } finally {
          reads.done(batch);
        }
        return more;
      }
      boolean goingOn = more && running && !paused && dispatcher.outagePause() == null;
      if (goingOn) {
        ahead = reader.submit(() -> reads.next(dispatcher));
      }
      try {
        dispatcher.send(batch);
      } catch (RuntimeException | Error e) {
        reads.done(batch); // send() finished the batch
        settleAfter(e);
        throw e;
      }
      settleSent(); // the batch sent before this one, whose last outcomes arrived while this one went out
      sent = batch;
      if (!goingOn || ordered || !dispatcher.overlapping() || !batch.awaitingOutcomes() || !running || paused
          || dispatcher.outagePause() != null) {
        settleSent(); // no next batch follows at once, nothing would overlap, or it failed: settled now
      }
      return more;
    }

    /** {@link #settleSent()} after {@code failure}, to which a failure of its own is added. */
    private void settleAfter(Throwable failure) {
      try {
        settleSent();
      } catch (RuntimeException | Error e) {
        failure.addSuppressed(e);
      }
    }

    /** {@link #settleSent()} outside a poll (pause, stop): a failure is logged and reported as a failed poll. */
    void settleQuietly() {
      try {
        settleSent();
      } catch (RuntimeException e) {
        LOG.warn("{}: settling the batch sent last failed; its events are published again (at-least-once)",
            dispatcher.worker(), e);
        listener.onPollFailed(e);
      }
    }

    /**
     * Settles the batch sent last, if any, then marks it in the background once the mark before it is done:
     * one mark overlaps the publications, so a crash repeats at most the batch being marked, the batch
     * settled and the batch sent after it.
     */
    void settleSent() {
      OutboxDispatcher.Batch batch = sent;
      if (batch == null) {
        return;
      }
      sent = null;
      try {
        dispatcher.settle(batch);
      } catch (RuntimeException | Error e) {
        reads.done(batch); // settle() finished the batch
        throw e;
      }
      awaitLastMark();
      marking = marker.submit(() -> finish(batch));
    }

    private void awaitLastMark() {
      Future<?> last = marking;
      marking = null;
      if (last == null) {
        return;
      }
      try {
        last.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } catch (java.util.concurrent.ExecutionException e) {
        // finish() reports its own failures
      }
    }

    /** The batch read ahead; {@code null} when interrupted, and the batch then stays ahead for the next turn. */
    private OutboxDispatcher.Batch take() {
      Future<OutboxDispatcher.Batch> f = ahead;
      try {
        OutboxDispatcher.Batch batch = f.get();
        ahead = null;
        return batch;
      } catch (InterruptedException e) {
        // not dropped: its events are left out of every read (or leased) until it is published or released
        Thread.currentThread().interrupt();
        return null;
      } catch (java.util.concurrent.ExecutionException e) {
        ahead = null;
        if (e.getCause() instanceof RuntimeException r) {
          throw r; // the claim failed: a failed poll
        }
        throw new OutboxException("claiming the next batch failed", e.getCause());
      }
    }

    private void finish(OutboxDispatcher.Batch batch) {
      try {
        batch.finish();
      } catch (RuntimeException e) {
        LOG.warn("{}: marking a published batch failed; its events are published again (at-least-once; with"
            + " claims once their leases run out)", dispatcher.worker(), e);
        listener.onPollFailed(e);
      } finally {
        reads.done(batch);
      }
    }

    /**
     * A batch claimed ahead goes back untried (pause or stop). The release runs on the reader's thread after
     * the claim, so an interrupt of this worker (stop() after its timeout) cannot skip it: a batch claimed
     * and never released would keep its leases, renewed in the background, while the JVM runs.
     */
    void abandonClaimedAhead() {
      Future<OutboxDispatcher.Batch> claimed = ahead;
      if (claimed == null) {
        return;
      }
      ahead = null;
      Future<?> released = reader.submit(() -> release(claimed));
      try {
        released.get();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // the release still runs
      } catch (java.util.concurrent.ExecutionException e) {
        LOG.debug("{}: releasing the batch claimed ahead failed", dispatcher.worker(), e.getCause());
      }
    }

    private void release(Future<OutboxDispatcher.Batch> claimed) {
      OutboxDispatcher.Batch batch;
      try {
        batch = claimed.get(); // done: it ran before this task on the same thread
      } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
        return; // the claim failed: nothing was claimed
      }
      if (batch == null) {
        return;
      }
      try {
        batch.abandon();
      } catch (RuntimeException e) {
        LOG.debug("{}: the batch claimed ahead could not be released; its leases run out", dispatcher.worker(), e);
      } finally {
        reads.done(batch);
      }
    }

    /**
     * Releases what was claimed ahead and lets the last marks finish until stop() gives up, also when stop()
     * interrupted this worker: that interrupt stops a publication, not the marks of what went out.
     */
    void close() {
      settleQuietly();
      abandonClaimedAhead();
      dispatcher.closeChannel();
      if (reader != null) {
        reader.shutdown();
        marker.shutdown();
        long deadline = stopDeadline;
        if (!ended(reader, deadline) || !ended(marker, deadline)) {
          LOG.warn("{}: the last marks, or the release of the batch claimed ahead, did not finish; their"
              + " events return when their leases run out", dispatcher.worker());
        }
      }
    }
  }

  /**
   * Without claims, the batches that the workers have read and not yet marked. Their events stay
   * {@code PENDING} until their marks commit, so every read leaves them out, and the reads of all workers
   * take turns, so that no two read the same event. A batch leaves only when it is finished: after its mark
   * committed (or failed), or when it went back untried, so a read that no longer leaves it out starts after
   * that commit. With claims the leases (or row locks) keep batches apart in the store, so the claims of the
   * workers run at once: a lease's claim writes every row it takes, and taking turns capped two workers at
   * what one claim statement at a time could take (against Kafka, 0.49 of the raw producer against 0.69).
   */
  private final class Reads {
    private final Set<OutboxDispatcher.Batch> inFlight = ConcurrentHashMap.newKeySet();
    /** Throughput mode: the last event of the last read, if that read was full; the next read goes on from it. */
    private OutboxEvent position; // guarded by this
    private final long fromStartEvery = Math.min(pollInterval.toNanos(), TimeUnit.SECONDS.toNanos(1));
    /** When the last read from the start began ({@link System#nanoTime()}). */
    private long fromStartNanos; // guarded by this
    /** Set when a batch ended with events not dispatched, or a topic resumed: events before the position wait. */
    private final AtomicBoolean fromStart = new AtomicBoolean(true);

    /**
     * In throughput mode a read (or claim) of a backlog goes on after the last event of the one before it,
     * instead of stepping over the events in flight again ({@link OutboxStore#fetchPendingAfter},
     * {@link ClaimRequest#after}): a claim held by a transaction stepped over each locked row of the batches in
     * flight, which more than doubled its cost with two workers. What became available before that place
     * meanwhile waits for the next read from the start: once per poll interval (at least once a second), at once
     * after a read going on that came back short (its store may stop at the end of a priority: the batch is
     * published all the same, and the worker polls again without waiting), and after every batch that did not
     * dispatch all its events or a topic resumed here. Claims running at once may go on from the same place;
     * the later one steps over what the other took, and the one that ends last sets the next place.
     */
    OutboxDispatcher.Batch next(OutboxDispatcher dispatcher) {
      if (useClaim && ordered) {
        return dispatcher.next();
      }
      if (useClaim) {
        return read(dispatcher);
      }
      synchronized (this) {
        return read(dispatcher);
      }
    }

    private OutboxDispatcher.Batch read(OutboxDispatcher dispatcher) {
      OutboxEvent from = goingOnFrom();
      // only a finished batch can leave while a read runs: leaving it out or not is then equally right
      OutboxDispatcher.Batch batch = from == null ? null : dispatcher.next(inFlight, from);
      if (batch == null) {
        readingFromTheStart();
        batch = dispatcher.next(inFlight, null);
      }
      read(batch);
      return batch;
    }

    /** The event the next read goes on after, or {@code null} when it reads from the start. */
    private synchronized OutboxEvent goingOnFrom() {
      boolean fromTheStart = fromStart.getAndSet(false) || System.nanoTime() - fromStartNanos >= fromStartEvery;
      return fromTheStart ? null : position;
    }

    private synchronized void readingFromTheStart() {
      fromStartNanos = System.nanoTime();
    }

    private synchronized void read(OutboxDispatcher.Batch batch) {
      if (batch != null) {
        inFlight.add(batch);
      }
      position = !ordered && batch != null && batch.size() == batchSize ? batch.last() : null;
    }

    void done(OutboxDispatcher.Batch batch) {
      inFlight.remove(batch);
      if (!batch.allDispatched()) {
        readFromTheStart(); // after the batch left, so a read that takes the flag no longer leaves it out
      }
    }

    /** Makes the next read start from the start: events before the position are available again. */
    void readFromTheStart() {
      fromStart.set(true);
    }
  }

  private void awaitQuietly(OutboxDispatcher dispatcher, long seen, Duration timeout,
      java.util.function.BooleanSupplier stop) {
    try {
      waiter.await(seen, timeout, stop);
    } catch (InterruptedException e) {
      if (running) {
        LOG.error("{}: interrupted while idle; polling goes on", dispatcher.worker());
      }
    }
  }

  private void sleepQuietly(OutboxDispatcher dispatcher, Duration timeout) {
    try {
      waiter.sleep(timeout, () -> !running);
    } catch (InterruptedException e) {
      if (running) {
        LOG.error("{}: interrupted while waiting for the broker; polling goes on", dispatcher.worker());
      }
    }
  }

  private void checkStalls() {
    for (int i = 0; i < dispatchers.size(); i++) {
      Publication p = dispatchers.get(i).current();
      if (p == null || p == reportedStalls[i]) {
        continue;
      }
      Duration running = Duration.ofNanos(System.nanoTime() - p.startNanos());
      if (running.compareTo(leaseTtl.dividedBy(2)) > 0) {
        reportedStalls[i] = p;
        Thread thread = threads.get(i);
        String where = thread == null ? "" : Arrays.toString(Arrays.copyOf(thread.getStackTrace(), 8));
        LOG.warn("{}: publishing event {} has taken {} (lease {}); if it outlives the lease another worker"
            + " may publish the event again. Stuck at: {}", dispatchers.get(i).worker(), p.event().id(),
            running, leaseTtl, where);
        listener.onPublishStalled(p.event(), dispatchers.get(i).worker(), running);
      }
    }
  }

  /** Waits for {@code pool} to end until {@code deadline}, through interrupts, which it keeps. */
  private static boolean ended(ExecutorService pool, long deadline) {
    return Uninterruptibly.until(deadline, nanos -> pool.awaitTermination(nanos, TimeUnit.NANOSECONDS));
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }

  private static java.util.concurrent.ThreadFactory namedThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
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
     * and broker round trips overlap. A crash then republishes at most two batches per worker instead of one;
     * three in throughput mode through a publisher whose {@link BatchChannel} overlaps batches (NATS's), where
     * a worker sends its next batch while the last one's acknowledgements arrive.
     * Without claims the read and the mark run at once, on connections of their own; the read leaves out the
     * events still being published or marked, which are {@code PENDING} until their mark, and the batch is
     * marked at its end as in claim mode.
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
