package io.mic.outbox.jdbc;

import io.mic.outbox.HeldAggregate;
import io.mic.outbox.OutboxEvent;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operator's tools for a {@link JdbcOutboxStore}'s dead letters: events in the {@code DLQ} after
 * {@code maxAttempts} failed publications. List them, redrive them (back to {@code PENDING}, to be
 * published again) or purge them. Only rows in the {@code DLQ} are ever read or changed.
 *
 * <pre>{@code
 * OutboxDeadLetters dlq = OutboxDeadLetters.builder().store(store).build();
 * List<OutboxEvent> poison = dlq.listDeadLetters(DeadLetterQuery.builder().topic("invoice.issued").build());
 * // fix the cause (consumer down, credentials, …), then:
 * long redriven = dlq.redrive(DeadLetterQuery.builder().errorContains("401 Unauthorized").build());
 * dlq.purgeDeadLetters(DeadLetterQuery.builder().topic("test.noise").build());
 * }</pre>
 *
 * <p>A redrive records itself in {@code last_error} ({@code redriven at <UTC time> after: <previous error>}).
 * Sets go oldest first, in batches of {@code batchSize}. <b>Ordered mode:</b> a redriven event becomes its
 * aggregate's head again by its original {@code created_at}, and is published <i>after</i> the successors
 * its dead letter released (docs/operations.md has the runbook), unless the dispatchers hold aggregates
 * ({@code holdAggregateOnDeadLetter(true)}): then nothing was released, the redriven event goes first and the
 * waiting ones follow in order, and a purge lets the waiting ones go on in order ({@link #heldAggregates()}).
 * Immutable and thread-safe.
 */
public final class OutboxDeadLetters {
  public static final int DEFAULT_BATCH_SIZE = 500;
  public static final int MAX_BATCH_SIZE = 10_000;

  private static final Logger LOG = LoggerFactory.getLogger(OutboxDeadLetters.class);

  private final TableAccess access;
  private final DeadLetterStatements statements;
  private final int batchSize;

  private OutboxDeadLetters(TableAccess access, int batchSize) {
    this.access = access;
    this.statements = new DeadLetterStatements(access);
    this.batchSize = batchSize;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * The dead letters matching {@code query}, oldest first ({@code created_at}, then {@code id}), at most its
   * limit or {@link DeadLetterQuery#DEFAULT_LIST_LIMIT}.
   */
  public List<OutboxEvent> listDeadLetters(DeadLetterQuery query) {
    Objects.requireNonNull(query, "query");
    int limit = query.limit().orElse(DeadLetterQuery.DEFAULT_LIST_LIMIT);
    return statements.list(query, limit);
  }

  /**
   * The aggregates whose later events wait behind a dead one, oldest dead event first: the ones dispatchers
   * built with {@code holdAggregateOnDeadLetter(true)} keep waiting until {@link #redrive(UUID)} of the dead
   * event (it goes first, then the waiting ones in order) or its purge (they go on in order). One query.
   */
  public List<HeldAggregate> heldAggregates() {
    return statements.held();
  }

  /**
   * Puts one dead letter back to {@code PENDING}.
   *
   * @return {@code true} if it was in the {@code DLQ} and is now {@code PENDING}; {@code false} if there is
   *     no such event or it is not a dead letter (it is left unchanged)
   */
  public boolean redrive(UUID id) {
    Objects.requireNonNull(id, "id");
    boolean redriven = redriveIds(List.of(id)) == 1;
    if (redriven) {
      LOG.info("outbox table {}: redrove dead letter {}", access.name, id);
    }
    return redriven;
  }

  /** Puts every dead letter matching {@code query} back to {@code PENDING}, oldest first; returns how many. */
  public long redrive(DeadLetterQuery query) {
    long total = forEachPage(query, this::redriveIds);
    LOG.info("outbox table {}: redrove {} dead letter(s) matching {}", access.name, total, query);
    return total;
  }

  /** Puts every dead letter back to {@code PENDING}, oldest first; returns how many. */
  public long redriveAll() {
    return redrive(DeadLetterQuery.all());
  }

  /** Deletes the dead letters matching {@code query}; returns how many. Nothing else is ever deleted. */
  public long purgeDeadLetters(DeadLetterQuery query) {
    long total = forEachPage(query, statements::delete);
    LOG.info("outbox table {}: purged {} dead letter(s) matching {}", access.name, total, query);
    return total;
  }

  private int redriveIds(List<UUID> ids) {
    int n = statements.redrive(ids);
    LOG.debug("outbox table {}: redrove {} of {}", access.name, n, ids);
    return n;
  }

  /**
   * Walks the matching dead letters oldest first, a page of ids at a time, and applies {@code op} to each
   * page. The cursor guarantees an end even if redriven events come back to the DLQ meanwhile.
   */
  private long forEachPage(DeadLetterQuery query, PageOp op) {
    Objects.requireNonNull(query, "query");
    long remaining = query.limit().isPresent() ? query.limit().getAsInt() : Long.MAX_VALUE;
    DeadLetterStatements.Page page = null;
    long total = 0;
    while (remaining > 0) {
      int size = (int) Math.min(batchSize, remaining);
      page = statements.page(query, page, size);
      if (page.ids().isEmpty()) {
        break;
      }
      total += op.apply(page.ids());
      remaining -= page.ids().size();
      if (page.ids().size() < size) {
        break;
      }
    }
    return total;
  }

  @FunctionalInterface
  private interface PageOp {
    int apply(List<UUID> ids);
  }

  /** Builds an {@link OutboxDeadLetters}; {@code store} is required. */
  public static final class Builder extends StoreToolBuilder<Builder, OutboxDeadLetters> {
    private Builder() {
      super(DEFAULT_BATCH_SIZE, MAX_BATCH_SIZE);
    }

    @Override
    OutboxDeadLetters create(JdbcOutboxStore store, int batchSize) {
      return new OutboxDeadLetters(store.access(), batchSize);
    }
  }
}
