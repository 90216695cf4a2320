package io.mic.outbox;

import static io.mic.outbox.OutboxDispatcher.MARK_RETRY_PAUSES;
import static io.mic.outbox.OutboxDispatcher.MARK_RETRY_WINDOW;

import io.mic.outbox.internal.ErrorText;
import io.mic.outbox.internal.Uninterruptibly;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's mark of published events, tried again while it throws (giving up at once would publish the whole
 * batch again), as {@link OutboxDispatcher} documents. A stop's interrupt does not cut the pauses short (what
 * went out is marked, as {@code stop()} promises); it is kept for the caller. With claims the leases are
 * renewed before each try, so that they do not run out while the mark waits.
 */
final class MarkRetry {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);

  private final DispatchSettings s;
  private final ClaimedBatch batch;
  private final boolean leased;

  MarkRetry(DispatchSettings s, ClaimedBatch batch, boolean leased) {
    this.s = s;
    this.batch = batch;
    this.leased = leased;
  }

  /** @return the ids of the events now {@code DISPATCHED}; any other lost its lease */
  Set<UUID> mark(List<OutboxEvent> events) {
    long first = System.nanoTime();
    RuntimeException failure = null;
    for (int attempt = 0; ; attempt++) {
      try {
        Set<UUID> marked = batch.markDispatched(events);
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
          LOG.warn("{}: marking {} published events failed; trying again in {}: {}", s.worker(), events.size(), pause,
              ErrorText.of(e));
        } else {
          LOG.debug("{}: marking {} published events failed again; trying again in {}", s.worker(), events.size(),
              pause, e);
        }
        Uninterruptibly.sleepUntil(System.nanoTime() + pause.toNanos()); // a stop still lets it mark
        if (leased) {
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
          boolean markedEarlier = s.store().find(e.id()).filter(row -> Objects.equals(row.createdAt(), e.createdAt()))
              .map(row -> row.status() == OutboxStatus.DISPATCHED && Objects.equals(row.leaseOwner(), e.leaseOwner()))
              .orElse(e.leaseOwner() == null);
          if (markedEarlier) {
            all.add(e.id());
          }
        } catch (RuntimeException lookupFailed) {
          LOG.debug("{}: cannot tell whether event {} was marked by an earlier try", s.worker(), e.id(), lookupFailed);
        }
      }
    }
    return all;
  }

  private void renewQuietly(List<OutboxEvent> events) {
    try {
      batch.renewLeases(events, s.leaseTtl()); // one taken over meanwhile fails its mark's fence: lease lost
    } catch (RuntimeException e) {
      LOG.debug("{}: renewing the leases of the events to mark failed too", s.worker(), e);
    }
  }
}
