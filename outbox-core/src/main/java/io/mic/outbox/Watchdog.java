package io.mic.outbox;

import io.mic.outbox.WorkerChannel.Publication;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Checks the workers of an {@link AsyncOutboxDispatcher} for a publication running longer than half the
 * lease: logged once at WARN with the worker's stack trace, and reported to
 * {@link OutboxListener#onPublishStalled}.
 */
final class Watchdog {
  private static final Logger LOG = LoggerFactory.getLogger(AsyncOutboxDispatcher.class);

  private final List<WorkerChannel> workers;
  private final Duration leaseTtl;
  private final OutboxListener listener;
  /** Each worker's thread while it runs: written by the workers, read by the watchdog's thread. */
  private final AtomicReferenceArray<Thread> threads;
  private final Publication[] reported; // the watchdog's thread only
  private ScheduledExecutorService timer;

  Watchdog(List<WorkerChannel> workers, Duration leaseTtl, OutboxListener listener) {
    this.workers = workers;
    this.leaseTtl = leaseTtl;
    this.listener = listener;
    this.threads = new AtomicReferenceArray<>(workers.size());
    this.reported = new Publication[workers.size()];
  }

  /** Starts checking; called under the lifecycle's lock, as {@link #stop()} is. */
  void start(String name) {
    timer = Executors.newSingleThreadScheduledExecutor(DaemonThreads.named(name + "-watchdog-"));
    long period = Math.max(50, Math.min(leaseTtl.toMillis() / 4, 5_000));
    timer.scheduleAtFixedRate(this::check, period, period, TimeUnit.MILLISECONDS);
  }

  void stop() {
    if (timer != null) {
      timer.shutdownNow();
      timer = null;
    }
  }

  /** The worker {@code index} runs on the current thread (until {@link #left}). */
  void entered(int index) {
    threads.set(index, Thread.currentThread());
  }

  void left(int index) {
    threads.set(index, null);
  }

  private void check() {
    for (int i = 0; i < workers.size(); i++) {
      WorkerChannel worker = workers.get(i);
      Publication p = worker.current();
      if (p == null || p == reported[i]) {
        continue;
      }
      Duration running = Duration.ofNanos(System.nanoTime() - p.startNanos());
      if (running.compareTo(leaseTtl.dividedBy(2)) > 0) {
        reported[i] = p;
        Thread thread = threads.get(i);
        String where = thread == null ? "" : Arrays.toString(Arrays.copyOf(thread.getStackTrace(), 8));
        LOG.warn("{}: publishing event {} has taken {} (lease {}); if it outlives the lease another worker"
            + " may publish the event again. Stuck at: {}", worker.worker(), p.event().id(), running, leaseTtl,
            where);
        listener.onPublishStalled(p.event(), worker.worker(), running);
      }
    }
  }
}
