package io.mic.outbox;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the leases of a claimed batch alive while it is being published, whatever the publisher's shape:
 * a background timer renews every event the worker has not settled yet at a third of the lease, so a slow
 * publication never lets another worker claim and publish the same events again. An event whose renewal
 * fails (its lease had passed to another worker) is reported lost; the worker then skips it.
 *
 * <p>The timer threads are shared by every dispatcher in the JVM, are daemons, and end when idle.
 */
final class LeaseKeeper {
  private static final Logger LOG = LoggerFactory.getLogger(LeaseKeeper.class);
  private static final ScheduledThreadPoolExecutor TIMER = timer();

  private LeaseKeeper() {}

  /**
   * Starts renewing the leases of the events {@code claimed}; close the returned lease when the batch is done.
   *
   * @param claimedAtNanos {@link System#nanoTime()} when the claim was sent: the leases run from then, not
   *     from when the answer arrived, which may be a lease later (a process frozen while the answer waited)
   */
  static Lease keep(ClaimedBatch claimed, Duration leaseTtl, String worker, long claimedAtNanos) {
    Lease lease = new Lease(claimed, leaseTtl, worker, claimedAtNanos);
    long period = Math.max(1, leaseTtl.toMillis() / 3);
    long sinceClaim = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - claimedAtNanos);
    lease.task = TIMER.scheduleWithFixedDelay(lease::renew, Math.max(0, period - sinceClaim), period,
        TimeUnit.MILLISECONDS);
    return lease;
  }

  private static ScheduledThreadPoolExecutor timer() {
    ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(2,
        DaemonThreads.named("mic-outbox-lease-keeper-"));
    timer.setKeepAliveTime(30, TimeUnit.SECONDS);
    timer.allowCoreThreadTimeOut(true);
    timer.setRemoveOnCancelPolicy(true);
    return timer;
  }

  /** The leases of one batch: events the worker still holds, and those another worker took over. */
  static final class Lease implements AutoCloseable {
    private final ClaimedBatch claimed;
    private final Duration leaseTtl;
    private final String worker;
    private final Map<UUID, OutboxEvent> held = new LinkedHashMap<>();
    private final Set<UUID> lost = ConcurrentHashMap.newKeySet();
    /** One renewal at a time, by the timer or {@link #confirm()}: two would race on the store and the count. */
    private final Object renewing = new Object();
    private volatile long renewals; // written under renewing only
    /** When the store last confirmed the leases ({@link System#nanoTime()}): the claim, then each renewal. */
    private volatile long confirmedNanos;
    private ScheduledFuture<?> task;

    private Lease(ClaimedBatch claimed, Duration leaseTtl, String worker, long claimedAtNanos) {
      this.claimed = claimed;
      this.leaseTtl = leaseTtl;
      this.worker = worker;
      this.confirmedNanos = claimedAtNanos;
      claimed.events().forEach(e -> held.put(e.id(), e));
    }

    /** The worker is about to record these events' outcome: stop renewing them. */
    void settle(Collection<OutboxEvent> events) {
      synchronized (held) {
        events.forEach(e -> held.remove(e.id()));
      }
    }

    /** {@code true} when a renewal found that another worker owns the event now. */
    boolean isLost(OutboxEvent event) {
      return lost.contains(event.id());
    }

    /**
     * Before a publication: when the last confirmation is older than two renewal periods (the process was
     * frozen, or the timer starved), the lease may have passed to another worker; renew now, on the
     * worker's thread, so the publication goes out only for events still held.
     */
    void confirm() {
      if (stale()) {
        synchronized (renewing) {
          if (stale()) { // the timer may have renewed them while this waited
            renewNow();
          }
        }
      }
    }

    private boolean stale() {
      return System.nanoTime() - confirmedNanos > leaseTtl.toNanos() * 2 / 3;
    }

    /** How many renewals have run; the worker marks its successes when this moves. */
    long renewals() {
      return renewals;
    }

    private void renew() {
      synchronized (renewing) {
        renewNow();
      }
    }

    private void renewNow() {
      long asked = System.nanoTime();
      List<OutboxEvent> snapshot;
      synchronized (held) {
        snapshot = new ArrayList<>(held.values());
      }
      if (snapshot.isEmpty()) {
        return;
      }
      try {
        Set<UUID> renewed = claimed.renewLeases(snapshot, leaseTtl);
        synchronized (held) {
          for (OutboxEvent e : snapshot) {
            if (!renewed.contains(e.id()) && held.remove(e.id()) != null) {
              lost.add(e.id());
            }
          }
        }
        confirmedNanos = asked;
        renewals++;
        LOG.debug("{}: renewed {} of {} leases", worker, renewed.size(), snapshot.size());
      } catch (RuntimeException e) {
        LOG.warn("{}: could not renew the leases of {} events (trying again in {}); if the store stays"
            + " unreachable past the lease, another worker may publish them again", worker, snapshot.size(),
            leaseTtl.dividedBy(3), e);
      }
    }

    @Override
    public void close() {
      task.cancel(false);
    }
  }
}
