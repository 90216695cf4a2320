package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.BiFunction;

/**
 * Where the outcomes of a batch are written: {@link MarkStatements} for a lease or a read without a claim,
 * each statement fenced and committed on its own; {@link HeldClaims} for claims held by transactions, whose
 * statements run in the batch's transaction, and which hands the outcomes of claims it does not hold to the
 * marks. {@link Statements#outcomes()} is the one of a store. Every method returns what it changed: an event
 * whose claim was lost (taken over, or its transaction ended) changes nothing.
 */
interface Outcomes {

  /**
   * Marks events dispatched, or deletes their rows ({@code deleteOnDispatch}). Unclaimed ({@code owner}
   * {@code null}), only rows appended no later than {@code appendedBy} ({@code null}: no bound): see
   * {@link MarkStatements#markDispatched}.
   */
  Set<UUID> markDispatched(String owner, List<UUID> ids, Instant appendedBy);

  /** Schedules a retry after {@code delay}, with the error; counts the attempt of an unclaimed event. */
  boolean scheduleRetry(OutboxEvent event, Duration delay, String error);

  boolean markDead(OutboxEvent event, String error);

  /** Puts untried events back to {@code PENDING} after {@code delay}: no attempt is counted for them. */
  Set<UUID> release(String owner, List<UUID> ids, Duration delay);

  /** Keeps {@code owner}'s claim on the events for {@code leaseTtl} more; the ids still held. */
  Set<UUID> renew(String owner, List<UUID> ids, Duration leaseTtl);

  /**
   * Marks {@code events} dispatched, one call per lease owner: the unclaimed ones ({@code owner} {@code null})
   * bounded by the newest {@code created_at} among them.
   */
  default Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    Instant appendedBy = newestAppend(events);
    return byOwner(events, (owner, ids) -> markDispatched(owner, ids, owner == null ? appendedBy : null));
  }

  /** Puts untried {@code events} back after {@code delay}, one call per lease owner. */
  default Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    return byOwner(events, (owner, ids) -> release(owner, ids, delay));
  }

  /** Renews the claims of {@code events}, one call per lease owner; nothing to renew without a claim. */
  default Set<UUID> renew(Collection<OutboxEvent> events, Duration leaseTtl) {
    return byOwner(events, (owner, ids) -> owner == null ? Set.of() : renew(owner, ids, leaseTtl));
  }

  /**
   * The newest {@code created_at} of {@code events}, which bounds an unclaimed mark
   * ({@link MarkStatements#markDispatched}); {@code null} when an event has none (not read from a store).
   */
  private static Instant newestAppend(Collection<OutboxEvent> events) {
    Instant newest = null;
    for (OutboxEvent e : events) {
      if (e.createdAt() == null) {
        return null;
      }
      newest = newest == null || e.createdAt().isAfter(newest) ? e.createdAt() : newest;
    }
    return newest;
  }

  /** Runs {@code op} once per lease owner (null: unclaimed events) and collects the ids it changed. */
  private static Set<UUID> byOwner(Collection<OutboxEvent> events, BiFunction<String, List<UUID>, Set<UUID>> op) {
    Map<String, List<UUID>> groups = new LinkedHashMap<>();
    for (OutboxEvent e : events) {
      groups.computeIfAbsent(e.leaseOwner(), k -> new ArrayList<>()).add(e.id());
    }
    Set<UUID> changed = new HashSet<>();
    groups.forEach((owner, ids) -> changed.addAll(op.apply(owner, ids)));
    return changed;
  }
}
