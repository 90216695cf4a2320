package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.UUID;

/**
 * Where the outcomes of a batch are written: {@link MarkStatements} for a lease or a read without a claim,
 * each statement fenced and committed on its own; {@link HeldClaims} for a claim held by a transaction, whose
 * statements run in that transaction. {@link JdbcOutboxStore} picks one per lease owner. Every method returns
 * what it changed: an event whose claim was lost (taken over, or its transaction ended) changes nothing.
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

  /** Moves an event to the DLQ, with the error. */
  boolean markDead(OutboxEvent event, String error);

  /** Puts untried events back to {@code PENDING} after {@code delay}: no attempt is counted for them. */
  Set<UUID> release(String owner, List<UUID> ids, Duration delay);

  /** Keeps {@code owner}'s claim on the events for {@code leaseTtl} more; the ids still held. */
  Set<UUID> renew(String owner, List<UUID> ids, Duration leaseTtl);
}
