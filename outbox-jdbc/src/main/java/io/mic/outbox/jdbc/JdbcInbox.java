package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.internal.Causes;
import io.mic.outbox.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer side of at-least-once delivery: a table of the events each consumer has already processed,
 * written in the same transaction as the consumer's business effect, so that a message delivered twice
 * (a redelivery, a rebalance, a replay) has its effect once.
 *
 * <pre>{@code
 * JdbcInbox inbox = JdbcInbox.builder().dataSource(dataSource).build();
 * inbox.createSchema();
 * String eventId = JdbcInbox.eventIdOf(headers);   // Map<String, String>: live or replayed
 * boolean applied = inbox.runOnce("billing", eventId, c -> createInvoice(c, payload));
 * }</pre>
 *
 * <p>The broker modules read the key for you ({@code NatsConsumers.handle}, {@code RabbitMqConsumers.handle},
 * {@code KafkaConsumers.handle}). {@link #tryRecord} is the building block when you manage the
 * transaction yourself: the primary key {@code (consumer, event_id)} decides between concurrent deliveries of
 * the same event (no SELECT first, no race). {@link #checkSequence} is the ordering guard, for a consumer that
 * cannot tolerate reordering. Immutable and thread-safe.
 */
public final class JdbcInbox {
  public static final String DEFAULT_TABLE = "outbox_inbox";
  public static final int DEFAULT_PURGE_BATCH_SIZE = 1_000;
  public static final int MAX_PURGE_BATCH_SIZE = 10_000;
  /** Longest consumer name or event id, in characters (the columns are {@code varchar(255)}). */
  public static final int MAX_KEY_LENGTH = OutboxHeaders.MAX_KEY_LENGTH;

  private static final Logger LOG = LoggerFactory.getLogger(JdbcInbox.class);

  private final DataSource dataSource;
  private final TableName tableName;
  private final int purgeBatchSize;
  private final Binding<InboxStatements> binding;

  private JdbcInbox(Builder b) {
    this.dataSource = b.dataSource;
    this.tableName = b.tableName;
    this.purgeBatchSize = b.purgeBatchSize;
    this.binding = new Binding<>("inbox", b.dataSource, b.dialect, b.tableName, InboxStatements::of);
  }

  private InboxStatements statements() {
    return binding.get();
  }

  private TableAccess access() {
    return statements().access;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * The dialect given to the builder, or detected from the database.
   *
   * @throws OutboxStoreException if it must be detected and the database is still unreachable
   */
  public Dialect dialect() {
    return access().dialect;
  }

  /** The validated table name, as configured. */
  public String table() {
    return tableName.toString();
  }

  /**
   * Creates the table, its index and the ordering guard's table ({@code <table>_sequences}) if they are
   * missing. Safe to call at every start: when all exist no DDL runs, so a runtime role with row rights
   * only (SELECT, INSERT, DELETE on the inbox; SELECT, INSERT, UPDATE on the guard's table) may call it.
   */
  public void createSchema() {
    TableAccess access = access();
    boolean created = access.createSchema(access.dialect.inboxSchemaResource(), DEFAULT_TABLE);
    LOG.info("inbox table {} {} ({})", tableName, created ? "ready" : "found", access.dialect.name());
  }

  /** The DDL of {@link Dialect#inboxSchemaResource()} for this inbox's table name, comments removed. */
  public String schemaDdl() {
    TableAccess access = access();
    return access.ddl(access.dialect.inboxSchemaResource(), DEFAULT_TABLE);
  }

  /**
   * Records that {@code consumer} processed {@code eventId}, inside the caller's transaction. Never
   * commits, rolls back or closes the connection; if the transaction rolls back, the record goes with it.
   *
   * <p>The caller's transaction stays usable after a duplicate, on every database.
   *
   * @return {@code true} the first time, {@code false} if the event was already recorded for this consumer
   * @throws OutboxException if the connection is in auto-commit mode: the record would be committed apart
   *     from the business effect
   * @throws InvalidInboxKeyException if {@code consumer} or {@code eventId} is blank, padded or too long
   * @throws OutboxStoreException if the database fails; roll the transaction back
   */
  public boolean tryRecord(Connection connection, String consumer, String eventId) {
    requireKey("consumer", consumer);
    requireKey("eventId", eventId);
    requireTransaction(connection);
    InboxStatements sql = statements();
    try {
      return sql.record(connection, consumer, eventId);
    } catch (SQLException e) {
      throw sql.access.failed(e);
    }
  }

  /**
   * Runs {@code effect} once per {@code (consumer, eventId)}: opens a transaction on a connection of the
   * inbox's DataSource, records the event, applies the effect only if the record is new, and commits
   * both. If the effect throws, everything rolls back (the record too), so a redelivery tries again.
   *
   * @return {@code true} if the effect was applied and committed, {@code false} for a duplicate (nothing
   *     was applied)
   * @throws RuntimeException the effect's own unchecked exception, unchanged, after the rollback
   * @throws OutboxException wrapping a checked exception of the effect, after the rollback
   * @throws OutboxStoreException if the database fails (nothing was committed)
   */
  public boolean runOnce(String consumer, String eventId, InboxEffect effect) {
    requireKey("consumer", consumer);
    requireKey("eventId", eventId);
    Objects.requireNonNull(effect, "effect");
    InboxStatements sql = statements();
    try (Connection c = dataSource.getConnection()) {
      boolean autoCommit = c.getAutoCommit();
      try {
        c.setAutoCommit(false);
        return recordAndApply(sql, c, consumer, eventId, effect);
      } finally {
        TableAccess.restoreAutoCommit(c, autoCommit);
      }
    } catch (SQLException e) {
      throw sql.access.failed(e);
    }
  }

  private boolean recordAndApply(InboxStatements sql, Connection c, String consumer, String eventId,
      InboxEffect effect) throws SQLException {
    try {
      if (!sql.record(c, consumer, eventId)) {
        c.rollback(); // ends the transaction and releases the lock a duplicate check may hold
        LOG.debug("inbox {}: consumer {} already processed event {}", tableName, consumer, eventId);
        return false;
      }
      apply(effect, c, consumer, eventId);
      commit(sql, c);
      return true;
    } catch (Throwable t) {
      TableAccess.rollback(c, t);
      throw t;
    }
  }

  /** Commits; a refusal (a deferred constraint of the effect's tables) is reported without the row it quotes. */
  private static void commit(InboxStatements sql, Connection c) {
    try {
      c.commit();
    } catch (SQLException e) {
      throw sql.access.failed(Causes.withoutValues(e));
    }
  }

  private static void apply(InboxEffect effect, Connection c, String consumer, String eventId) {
    try {
      effect.apply(c);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      // the class only: a database's text quotes the effect's rows (the message's data); the cause keeps it
      throw new OutboxException("the effect of consumer '" + consumer + "' for event '" + eventId + "' failed: "
          + e.getClass().getName() + "; the transaction was rolled back and the event is not recorded", e);
    }
  }

  /**
   * The ordering guard, for a consumer that must apply an aggregate's events in order: compares the
   * message's {@code sequence} with the last one {@code consumer} processed for the aggregate, inside the
   * caller's transaction. The guard row stays locked until that transaction ends, so concurrent deliveries
   * of one aggregate take turns and each sequence is answered {@link SequenceCheck#NEXT} exactly once.
   *
   * <pre>{@code
   * c.setAutoCommit(false);
   * switch (inbox.checkSequence(c, "billing", "order", orderId, JdbcInbox.sequenceOf(headers))) {
   *   case NEXT -> { apply(c, message); c.commit(); ack(); }     // recorded with the effect
   *   case DUPLICATE -> { c.rollback(); ack(); }                   // processed before
   *   case GAP -> { c.rollback(); nackWithDelay(); }              // an earlier one is missing: hold it
   * }
   * }</pre>
   *
   * @return {@link SequenceCheck#NEXT} (recorded; rolls back with the transaction),
   *     {@link SequenceCheck#DUPLICATE} ({@code sequence} at or below the last one) or
   *     {@link SequenceCheck#GAP} (beyond the next one; nothing recorded). An aggregate the consumer has
   *     never seen has last sequence 0: see {@link #recordSequence} to start it elsewhere.
   * @throws InvalidInboxKeyException if a name is blank, padded or too long, or {@code sequence < 1}
   * @throws OutboxException if the connection is in auto-commit mode
   * @throws OutboxStoreException if the database fails; roll the transaction back
   */
  public SequenceCheck checkSequence(Connection connection, String consumer, String aggregateType,
      String aggregateId, long sequence) {
    requireGuardKey(consumer, aggregateType, aggregateId, sequence);
    requireGuardTransaction(connection);
    InboxStatements sql = statements();
    try {
      long last = lockGuard(sql, connection, consumer, aggregateType, aggregateId);
      if (sequence <= last) {
        return SequenceCheck.DUPLICATE;
      }
      if (sequence > last + 1) {
        LOG.debug("inbox {}: consumer {} got sequence {} of {}/{} after {}: a gap", tableName, consumer,
            sequence, aggregateType, aggregateId, last);
        return SequenceCheck.GAP;
      }
      sql.advanceGuard(connection, consumer, aggregateType, aggregateId, sequence);
      return SequenceCheck.NEXT;
    } catch (SQLException e) {
      throw sql.access.failed(e);
    }
  }

  /**
   * {@link #checkSequence(Connection, String, String, String, long)} with the aggregate and the sequence
   * read from the message's headers ({@code x-aggregate-type}, {@code x-aggregate-id}, {@code x-sequence}).
   *
   * @throws InvalidInboxKeyException if one of them is missing or malformed
   */
  public SequenceCheck checkSequence(Connection connection, String consumer, Map<String, String> headers) {
    if (headers == null) {
      throw new InvalidInboxKeyException("headers are required to find the aggregate and its sequence");
    }
    String type = header(headers, OutboxHeaders.AGGREGATE_TYPE);
    String id = header(headers, OutboxHeaders.AGGREGATE_ID);
    if (type == null || id == null) {
      throw new InvalidInboxKeyException("the message carries no aggregate: expected headers "
          + OutboxHeaders.AGGREGATE_TYPE + " and " + OutboxHeaders.AGGREGATE_ID + "; header names present: "
          + new TreeSet<>(headers.keySet()));
    }
    return checkSequence(connection, consumer, type, id, sequenceOf(headers));
  }

  /**
   * Records {@code sequence} as the last one {@code consumer} processed for the aggregate, whatever was
   * recorded before, in the caller's transaction: to accept a gap after a timeout, or to start a consumer
   * in the middle of an aggregate's history (events purged, or appended before the envelope).
   */
  public void recordSequence(Connection connection, String consumer, String aggregateType, String aggregateId,
      long sequence) {
    requireGuardKey(consumer, aggregateType, aggregateId, sequence);
    requireGuardTransaction(connection);
    InboxStatements sql = statements();
    try {
      lockGuard(sql, connection, consumer, aggregateType, aggregateId);
      sql.advanceGuard(connection, consumer, aggregateType, aggregateId, sequence);
    } catch (SQLException e) {
      throw sql.access.failed(e);
    }
  }

  private long lockGuard(InboxStatements sql, Connection c, String consumer, String aggregateType,
      String aggregateId) throws SQLException {
    long last = sql.lockGuard(c, consumer, aggregateType, aggregateId);
    if (last < 0) {
      throw new OutboxStoreException("inbox table " + tableName + ": the ordering guard row of consumer '"
          + consumer + "' and aggregate " + aggregateType + "/" + aggregateId + " vanished after it was"
          + " created; roll the transaction back and retry", null);
    }
    return last;
  }

  private static void requireGuardKey(String consumer, String aggregateType, String aggregateId, long sequence) {
    requireKey("consumer", consumer);
    requireKey("aggregateType", aggregateType);
    requireKey("aggregateId", aggregateId);
    if (sequence < 1) {
      throw new InvalidInboxKeyException("sequence must be >= 1, was " + sequence + ": an event without a"
          + " sequence (appended before the envelope, or by a store that numbers none) cannot be ordered;"
          + " process it without the guard");
    }
  }

  private static void requireGuardTransaction(Connection connection) {
    TableAccess.requireTransaction(connection, "checkSequence needs the caller's transaction, but the connection"
        + " is in auto-commit mode: the sequence would be recorded apart from the effect. Call"
        + " connection.setAutoCommit(false), check, apply the effect, then commit");
  }

  /**
   * The {@code x-sequence} of a received message (header name matched case-insensitively), or 0 when it
   * has none (an event appended before the envelope, or by a store that numbers none).
   *
   * @throws InvalidInboxKeyException if the header is not a positive whole number
   */
  public static long sequenceOf(Map<String, String> headers) {
    if (headers == null) {
      throw new InvalidInboxKeyException("headers are required to find the sequence");
    }
    String value = header(headers, OutboxHeaders.SEQUENCE);
    if (value == null) {
      return 0;
    }
    try {
      long sequence = Long.parseLong(value);
      if (sequence >= 1) {
        return sequence;
      }
    } catch (NumberFormatException e) {
      // reported below
    }
    throw new InvalidInboxKeyException("header " + OutboxHeaders.SEQUENCE + " must be a whole number >= 1, was '"
        + (value.length() > 40 ? value.substring(0, 40) + "…" : value) + "'");
  }

  /**
   * Deletes the records processed more than {@code retention} ago (by the database clock), in batches of
   * {@code purgeBatchSize} rows, each its own short transaction, so that no lock is held for long.
   * Choose a retention longer than the broker may still redeliver or replay a message: a record purged
   * before its last redelivery lets that delivery apply the effect again.
   *
   * @return how many records were deleted
   */
  public long purgeOlderThan(Duration retention) {
    long micros = TableAccess.retentionMicros(retention);
    long total = TableAccess.deleteInBatches(() -> purgeBatch(micros), purgeBatchSize, running -> {});
    if (total > 0) {
      LOG.info("inbox table {}: purged {} record(s) processed more than {} ago", tableName, total, retention);
    }
    return total;
  }

  /** The ids of every event {@code consumer} recorded, e.g. to compare with what a broker delivered. */
  public java.util.Set<String> recordedEventIds(String consumer) {
    return access().inAutoCommit(c -> statements().eventIds(c, Objects.requireNonNull(consumer, "consumer")));
  }

  /** One purge statement: at most {@code purgeBatchSize} rows. */
  int purgeBatch(long retentionMicros) {
    return statements().purge(retentionMicros, purgeBatchSize);
  }

  /**
   * The idempotency key of a received message: {@code x-original-event-id} when present (a replay), else
   * {@code x-event-id} (a live publication). Both carry the id of the outbox event, so a replayed message
   * is recognised as the event already processed live. Header names match case-insensitively.
   *
   * @throws InvalidInboxKeyException if neither header is present, or the one found is blank
   */
  public static String eventIdOf(Map<String, String> headers) {
    if (headers == null) {
      throw new InvalidInboxKeyException("headers are required to find the event id");
    }
    for (String name : new String[] {OutboxHeaders.ORIGINAL_EVENT_ID, OutboxHeaders.EVENT_ID}) {
      String value = header(headers, name);
      if (value != null) {
        requireKey(name + " header", value);
        return value;
      }
    }
    throw new InvalidInboxKeyException("the message carries no event id: expected header " + OutboxHeaders.EVENT_ID
        + " (live publication) or " + OutboxHeaders.ORIGINAL_EVENT_ID + " (replay); header names present: "
        + new TreeSet<>(headers.keySet()));
  }

  private static String header(Map<String, String> headers, String name) {
    String value = headers.get(name);
    return value != null ? value : headers.entrySet().stream()
        .filter(e -> name.equalsIgnoreCase(e.getKey()) && e.getValue() != null).map(Map.Entry::getValue)
        .findFirst().orElse(null);
  }

  private static void requireKey(String what, String value) {
    String problem = OutboxHeaders.keyProblem(what, value);
    if (problem != null) {
      throw new InvalidInboxKeyException(problem);
    }
  }

  private static void requireTransaction(Connection connection) {
    TableAccess.requireTransaction(connection, "tryRecord needs the caller's transaction, but the connection is in"
        + " auto-commit mode: the record would be committed apart from the business effect, and a crash in"
        + " between would lose the message. Call connection.setAutoCommit(false), record, apply the effect,"
        + " then commit; or use runOnce(...)");
  }

  /** Builds a {@link JdbcInbox}; {@code dataSource} is required. */
  public static final class Builder extends TableBuilder<Builder> {
    private int purgeBatchSize = DEFAULT_PURGE_BATCH_SIZE;

    private Builder() {
      super(DEFAULT_TABLE);
    }

    /** Rows deleted per purge statement (default 1000, at most 10000). */
    public Builder purgeBatchSize(int purgeBatchSize) {
      this.purgeBatchSize = purgeBatchSize;
      return this;
    }

    /**
     * Builds the inbox and detects the dialect unless one was given. A database that cannot be reached now
     * does not fail the build (a consumer may start before its database): the inbox then detects on its
     * first use, and every use fails with the driver's reason until the database answers.
     *
     * @throws InvalidConfigurationException naming the option that is wrong
     * @throws UnsupportedDatabaseException if the database answers and is not supported
     */
    public JdbcInbox build() {
      if (purgeBatchSize < 1 || purgeBatchSize > MAX_PURGE_BATCH_SIZE) {
        throw new InvalidConfigurationException("purgeBatchSize must be between 1 and " + MAX_PURGE_BATCH_SIZE
            + ", was " + purgeBatchSize);
      }
      requireDataSource();
      JdbcInbox inbox = new JdbcInbox(this);
      inbox.binding.tryNow();
      return inbox;
    }
  }
}
