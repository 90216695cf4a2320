package io.mic.outbox.jdbc;

import static java.util.stream.Collectors.toSet;

import io.mic.outbox.ClaimRequest;
import io.mic.outbox.ClaimedBatch;
import io.mic.outbox.DuplicateEventException;
import io.mic.outbox.HeldAggregate;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.PauseState;
import io.mic.outbox.jdbc.internal.AppendChannel;
import io.mic.outbox.jdbc.internal.PostgresAppendListener;
import io.mic.outbox.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The outbox in a SQL table. Appends join the caller's transaction; the dispatcher's reads and marks use
 * short auto-commit statements on connections of the {@link DataSource}.
 *
 * <pre>{@code
 * JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).build();
 * store.createSchema();
 * try (Connection c = dataSource.getConnection()) {
 *   c.setAutoCommit(false);
 *   insertOrder(c, order);                         // the business change
 *   store.append(c, OutboxEvent.builder()          // the event, in the same transaction
 *       .aggregate("order", order.id()).topic("order.created").payload(order.json()).build());
 *   c.commit();
 * }
 * }</pre>
 *
 * <p>Times ({@code created_at}, {@code next_attempt_at}, leases) come from the database clock, never the
 * JVM's. An append serialises with the other appends to the event's aggregate until its transaction
 * ends (docs/ordering.md has how), so two transactions writing the same aggregate get
 * {@code created_at} in commit order and ordered mode can never publish them the wrong way round.
 *
 * <p>Each event gets its aggregate's next {@code sequence} (1, 2, 3 …) from the counter table
 * {@code <table>_sequences}, in the appending transaction: committed numbers have no gap.
 */
public final class JdbcOutboxStore implements OutboxStore {
  public static final String DEFAULT_TABLE = "outbox";
  /**
   * The schema version of the outbox's tables that this library knows: {@link #createSchema()} records it in the
   * control table, and a store refuses to dispatch from tables that record a newer one
   * ({@link SchemaTooNewException}).
   */
  public static final int SCHEMA_VERSION = 2;

  private static final Logger LOG = LoggerFactory.getLogger(JdbcOutboxStore.class);

  private final TableName tableName;
  private final DataSource dataSource;
  /** Where appends are announced ({@link Builder#notifyOnAppend}); null when they are not. */
  private final AppendChannel appendChannel;
  private final Binding<Statements> binding;
  private final boolean deleteOnDispatch;
  /** The interval of a table partitioned by {@link Builder#partitionInterval}; null for a plain table. */
  private final Duration partitionInterval;
  /** Its partitions, once the table is bound. */
  private volatile PostgresPartitions partitions;

  private JdbcOutboxStore(Builder b) {
    this.tableName = b.tableName;
    this.deleteOnDispatch = b.deleteOnDispatch;
    this.dataSource = b.dataSource;
    this.partitionInterval = b.partitionInterval;
    this.appendChannel = b.notifyOnAppend ? AppendChannel.of(b.tableName) : null;
    this.binding = new Binding<>("outbox", b.dataSource, b.dialect, b.tableName, access -> {
      if (appendChannel != null && !(access.dialect instanceof PostgresDialect)) {
        throw new InvalidConfigurationException("notifyOnAppend(true) needs PostgreSQL (LISTEN/NOTIFY), but outbox"
            + " table " + tableName + " is on " + access.dialect.name() + ": remove notifyOnAppend(true);"
            + " dispatchers on " + access.dialect.name() + " find new events by polling (pollInterval)");
      }
      if (b.transactionalClaims && !(access.dialect instanceof PostgresDialect)) {
        throw new InvalidConfigurationException("transactionalClaims(true) needs PostgreSQL, but outbox table "
            + tableName + " is on " + access.dialect.name() + ": remove transactionalClaims(true); claims on "
            + access.dialect.name() + " are leases written into the rows");
      }
      if (b.partitionInterval != null && !(access.dialect instanceof PostgresDialect)) {
        throw new InvalidConfigurationException("partitionInterval(" + b.partitionInterval + ") needs PostgreSQL,"
            + " but outbox table " + tableName + " is on " + access.dialect.name() + ": remove partitionInterval;"
            + " retention on " + access.dialect.name() + " deletes rows (OutboxMaintenance.purgeDispatchedOlderThan)");
      }
      return Statements.of(access, b.deleteOnDispatch, b.transactionalClaims);
    });
  }

  /**
   * The partitions of this store's table, bound to its database.
   *
   * @throws InvalidConfigurationException if the store was built without {@link Builder#partitionInterval}
   */
  PostgresPartitions partitions(String operation) {
    if (partitionInterval == null) {
      throw new InvalidConfigurationException(operation + " needs a store built with partitionInterval(...), but"
          + " outbox table " + tableName + " is not partitioned: use purgeDispatchedOlderThan for its retention");
    }
    return partitions();
  }

  /** Null for a plain table; binds the table (which refuses a database other than PostgreSQL). */
  private PostgresPartitions partitions() {
    if (partitionInterval == null) {
      return null;
    }
    PostgresPartitions p = partitions;
    if (p == null) {
      p = new PostgresPartitions(bind().access(), partitionInterval);
      partitions = p;
    }
    return p;
  }

  /** Keeps the partitions ahead from the dispatcher's reads, at a low rate ({@link PostgresPartitions#keepAhead}). */
  private void keepPartitionsAhead() {
    if (partitionInterval != null) {
      partitions().keepAhead();
    }
  }

  private Statements bind() {
    return binding.get();
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
    return bind().access().dialect;
  }

  /** The validated table name, as configured. */
  public String table() {
    return tableName.toString();
  }

  /** True when a mark deletes the row ({@link Builder#deleteOnDispatch}): a dispatched event is not found. */
  public boolean deletesOnDispatch() {
    return deleteOnDispatch;
  }

  TableAccess access() {
    return bind().access();
  }

  /**
   * Creates the table, its indexes and the tables beside it if they are missing (with
   * {@link Builder#transactionalClaims}, the claim journal too), and runs {@link #upgradeEnvelopeDdl()} and
   * {@link #upgradeIndexesDdl()} on a table that needs them. Safe to call at every start: when everything
   * exists no DDL runs, so a runtime role with row rights only may call it. With
   * {@link Builder#partitionInterval}: the table is partitioned, a plain one of its name is converted (its rows
   * kept), and the partitions ahead are created ({@link OutboxMaintenance#ensurePartitions()}).
   */
  public void createSchema() {
    Statements statements = bind();
    new OutboxSchema(statements.access(), partitions()).create(statements.held() != null);
  }

  /** The script that adds the event envelope's columns to an older table, for this store's table name. */
  public String upgradeEnvelopeDdl() {
    return new OutboxSchema(access(), partitions()).envelopeUpgradeDdl();
  }

  /** The script that replaces the indexes of a table older than the lean schema or parking (PostgreSQL), else empty. */
  public String upgradeIndexesDdl() {
    return new OutboxSchema(access(), partitions()).indexesUpgradeDdl();
  }

  /** The DDL of {@link Dialect#schemaResource()} for this store's table name, comments removed. */
  public String schemaDdl() {
    return new OutboxSchema(access(), partitions()).ddl();
  }

  /**
   * Appends one event inside the caller's transaction. Never commits, rolls back or closes the connection.
   *
   * @throws OutboxException if the connection is in auto-commit mode: the event would then be committed
   *     apart from the business change, which defeats the outbox
   * @throws DuplicateEventException if an event with this id exists (the transaction must roll back)
   */
  public void append(Connection connection, OutboxEvent event) {
    Objects.requireNonNull(event, "event");
    append(connection, List.of(event));
  }

  /**
   * Appends events inside the caller's transaction with one JDBC batch, in the order given (which is
   * their order within an aggregate, and their dispatch order among equal priorities): the events get
   * distinct, increasing {@code created_at}, one microsecond apart, from one reading of the database clock.
   * Never commits, rolls back or closes the connection.
   */
  public void append(Connection connection, Collection<OutboxEvent> events) {
    Objects.requireNonNull(events, "events");
    requireTransaction(connection);
    AppendStatements append = bind().append();
    if (events.isEmpty()) {
      return;
    }
    try {
      // with notifyOnAppend, one notification per call, delivered at commit: see Builder#notifyOnAppend
      append.append(connection, events, appendChannel);
    } catch (SQLException e) {
      throw append.failed(e, events, tableName);
    }
  }

  /** Skips {@code pausedTopics} and the topics paused in the control table when the read starts. */
  @Override
  public List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder, Set<String> pausedTopics) {
    return fetchPending(limit, preserveAggregateOrder, pausedTopics, Set.of());
  }

  /** Leaves the events in flight out in the statement itself. */
  @Override
  public List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder, Set<String> pausedTopics,
      Set<UUID> inFlight) {
    keepPartitionsAhead();
    return fetch(ReadRequest.fetch(limit, preserveAggregateOrder, pausedTopics, inFlight));
  }

  /** Leaves the events in flight out in the statement itself; holding, the aggregates with dead events too. */
  @Override
  public List<OutboxEvent> fetchPendingHeads(int limit, Set<String> pausedTopics, Set<UUID> inFlight,
      boolean holdOnDeadLetter) {
    return fetch(ReadRequest.fetch(limit, true, pausedTopics, inFlight, holdOnDeadLetter));
  }

  /**
   * Goes on after {@code after} within its priority (on PostgreSQL the claim index's scan starts there); stops
   * at the end of that priority. Of the events in flight, only those that may come after {@code after} are left
   * out in the statement (usually none): the read never meets the others' rows. Events of the same
   * {@code created_at} count as ahead, since the databases may order their ids otherwise than Java.
   */
  @Override
  public List<OutboxEvent> fetchPendingAfter(OutboxEvent after, int limit, Set<String> pausedTopics,
      Collection<OutboxEvent> inFlight) {
    Instant position = Objects.requireNonNull(after.createdAt(), "after: an event as the store returned it");
    Set<UUID> ahead = inFlight.stream().filter(e -> e.priority() == after.priority()
        && !e.createdAt().isBefore(position) && !e.id().equals(after.id())).map(OutboxEvent::id).collect(toSet());
    return fetch(ReadRequest.fetchAfter(after, limit, pausedTopics, ahead));
  }

  /** A read without a claim; on PostgreSQL after parking and unparking when that is due ({@link PostgresParking}). */
  private List<OutboxEvent> fetch(ReadRequest request) {
    Statements statements = bind();
    return statements.read(request, statements.fetch()::fetch);
  }

  /**
   * Skips the request's paused topics and the topics paused in the control table when the claim starts: a
   * pause committed before it holds, whatever the caller read before. A paused topic ends a run. Refused with
   * {@link Builder#transactionalClaims}, whose claims are batches holding a transaction: {@link #claimBatch}.
   */
  @Override
  public List<OutboxEvent> claim(ClaimRequest request) {
    Statements statements = bind();
    if (statements.held() != null) {
      throw HeldClaims.claimWithoutBatch(table());
    }
    keepPartitionsAhead();
    ReadRequest read = ReadRequest.claim(request);
    return read.inDispatchOrder(statements.read(read, statements.claim()::claim));
  }

  /** With {@link Builder#transactionalClaims}, a batch holding its rows in a transaction of its own. */
  @Override
  public ClaimedBatch claimBatch(ClaimRequest request) {
    Statements statements = bind();
    if (statements.held() == null) {
      return OutboxStore.super.claimBatch(request);
    }
    keepPartitionsAhead();
    return statements.read(ReadRequest.claim(request), statements.held()::claim);
  }

  @Override
  public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    return bind().marks().markDispatched(events);
  }

  @Override
  public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    return bind().marks().scheduleRetry(event, delay, error);
  }

  @Override
  public boolean markDead(OutboxEvent event, String error) {
    return bind().marks().markDead(event, error);
  }

  @Override
  public Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    return bind().marks().release(events, delay);
  }

  @Override
  public Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
    return bind().marks().renew(events, leaseTtl);
  }

  @Override
  public Optional<OutboxEvent> find(UUID id) {
    return bind().queries().find(id);
  }

  @Override
  public Map<OutboxStatus, Long> countByStatus() {
    return bind().queries().countByStatus();
  }

  /** One query ({@link OutboxDeadLetters#heldAggregates()}). */
  @Override
  public List<HeldAggregate> heldAggregates() {
    return new DeadLetterStatements(access()).held();
  }

  @Override
  public Optional<Duration> oldestPendingAge() {
    return bind().queries().oldestPendingAge();
  }

  @Override
  public Optional<Duration> oldestPendingAge(Set<String> exceptTopics) {
    Objects.requireNonNull(exceptTopics, "exceptTopics");
    return bind().queries().oldestPendingAge(exceptTopics);
  }

  /**
   * {@inheritDoc}
   *
   * <p>One query per call ({@link Catalog}); always empty on H2. PostgreSQL shows other roles' sessions only
   * to a role with {@code pg_read_all_stats}; MariaDB needs the PROCESS privilege.
   */
  @Override
  public Optional<Duration> oldestTransactionAge() {
    return bind().queries().oldestTransactionAge();
  }

  /** {@inheritDoc} One query of the statistics per call; always empty on MariaDB and H2. */
  @Override
  public OptionalLong deadTuples() {
    return bind().queries().deadTuples();
  }

  /**
   * With {@link Builder#notifyOnAppend(boolean) notifyOnAppend(true)}: listens for the appends of every
   * process on a connection of its own ({@link PostgresAppendListener}). Without it, empty.
   */
  @Override
  public Optional<Subscription> subscribeToAppends(Runnable wakeUp) {
    Objects.requireNonNull(wakeUp, "wakeUp");
    if (appendChannel == null) {
      return Optional.empty();
    }
    try {
      bind(); // refuses a database other than PostgreSQL before a listener is started on it
    } catch (OutboxStoreException e) {
      LOG.debug("outbox table {}: database unreachable; the listener keeps trying", tableName, e);
    }
    return Optional.of(PostgresAppendListener.start(dataSource, appendChannel, wakeUp));
  }

  /**
   * The pauses in this outbox's control table ({@link OutboxControl}), read with one short query per call.
   * An outbox whose control table does not exist yet, or that this role cannot read, is not paused: that is
   * logged once at WARN, and the table is looked for again every
   * {@value ControlStatements#RECHECK_SECONDS} seconds.
   */
  @Override
  public PauseState pauseState() {
    return bind().control().pauseState();
  }

  private static void requireTransaction(Connection connection) {
    TableAccess.requireTransaction(connection, "append needs the caller's transaction, but the connection is in"
        + " auto-commit mode: the event would be committed apart from the business change. Call"
        + " connection.setAutoCommit(false), write the business change and the event, then commit");
  }

  /** Builds a {@link JdbcOutboxStore}; {@code dataSource} is required. */
  public static final class Builder extends TableBuilder<Builder> {
    private boolean notifyOnAppend;
    private boolean deleteOnDispatch;
    private boolean transactionalClaims;
    private Duration partitionInterval;

    private Builder() {
      super(DEFAULT_TABLE);
    }

    /**
     * Announce every append so that the dispatchers of every process wake up at its commit instead of at
     * their next poll (default {@code false}). Set it on the stores of the appending processes and of the
     * dispatching ones alike. <b>PostgreSQL only</b> ({@code LISTEN/NOTIFY}): refused elsewhere with an
     * {@link InvalidConfigurationException}. Each {@link io.mic.outbox.AsyncOutboxDispatcher} on such a store
     * holds one connection of the {@code DataSource} to listen; docs/configuration.md has the details.
     *
     * <pre>{@code
     * JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).notifyOnAppend(true).build();
     * }</pre>
     */
    public Builder notifyOnAppend(boolean notify) {
      this.notifyOnAppend = notify;
      return this;
    }

    /**
     * Delete each event's row when its publication is marked, instead of keeping it as {@code DISPATCHED}
     * until retention purges it (default {@code false}). The mark stays fenced; retries, the DLQ and ordered
     * mode are unchanged. What it gives up: the dispatched history ({@code find}, {@code countByStatus()},
     * archive and reconcile see no dispatched row, and an event id can be appended again once its row is
     * gone). Keep the default when you archive the outbox or audit it (docs/configuration.md).
     */
    public Builder deleteOnDispatch(boolean delete) {
      this.deleteOnDispatch = delete;
      return this;
    }

    /**
     * Hold each claim as the row locks of a transaction kept open until the batch's last outcome, instead of
     * a lease written into the rows (default {@code false}); for dispatchers with {@code useClaim(true)}.
     * Claims stay disjoint and ordered mode keeps its order. A claimed event stays {@code PENDING} in the
     * table; a batch that ends without its outcomes still counts its attempts through the claim journal
     * {@code <table>_claims}, which {@link JdbcOutboxStore#createSchema()} creates. Each batch in flight holds a connection:
     * size the pool for {@code 2 × workers + 1} ({@code 3 × workers + 1} in throughput mode through NATS).
     * A claim is then a {@link #claimBatch batch} that owns its transaction; {@link #claim} is refused.
     * <b>PostgreSQL only</b>: refused elsewhere with an {@link InvalidConfigurationException}.
     * docs/configuration.md has what changes, and why.
     */
    public Builder transactionalClaims(boolean transactional) {
      this.transactionalClaims = transactional;
      return this;
    }

    /**
     * Partition the table by range of {@code created_at}, one partition per {@code interval} (at least an hour,
     * whole minutes), so that retention drops whole partitions ({@link OutboxMaintenance#dropPartitionsOlderThan})
     * instead of deleting rows. {@link JdbcOutboxStore#createSchema()} creates the partitioned table (or converts
     * a plain one holding rows) and the partitions ahead; {@link OutboxMaintenance#ensurePartitions()} and the
     * dispatchers' reads keep them ahead. <b>PostgreSQL 13 or later only</b>: refused elsewhere with an
     * {@link InvalidConfigurationException}. docs/jdbc.md has the layout and the upgrade.
     *
     * <pre>{@code
     * JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource)
     *     .partitionInterval(Duration.ofDays(1)).build();
     * }</pre>
     */
    public Builder partitionInterval(Duration interval) {
      Objects.requireNonNull(interval, "partitionInterval");
      if (interval.compareTo(PostgresPartitions.MIN_INTERVAL) < 0 || interval.toSecondsPart() != 0
          || interval.toNanosPart() != 0) {
        throw new InvalidConfigurationException("partitionInterval must be at least " + PostgresPartitions.MIN_INTERVAL
            + " in whole minutes, was " + interval + ": e.g. Duration.ofDays(1) or Duration.ofHours(6)");
      }
      this.partitionInterval = interval;
      return this;
    }

    /**
     * Builds the store and detects the dialect unless one was given. A database that cannot be reached now
     * does not fail the build (an application may start before its database): the store then detects on
     * its first use, and every use fails with the driver's reason until the database answers.
     *
     * @throws InvalidConfigurationException naming the option that is wrong
     * @throws UnsupportedDatabaseException if the database answers and is not supported
     */
    public JdbcOutboxStore build() {
      requireDataSource();
      JdbcOutboxStore store = new JdbcOutboxStore(this);
      store.binding.tryNow();
      return store;
    }
  }
}
