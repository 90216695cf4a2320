package io.mic.outbox.jdbc;

import io.mic.outbox.DuplicateEventException;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.PauseState;
import io.mic.outbox.internal.UuidV7;
import io.mic.outbox.jdbc.internal.HeadersJson;
import io.mic.outbox.jdbc.internal.Runs;
import io.mic.outbox.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;
import java.util.function.IntFunction;
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
 * JVM's. By default an append takes a transaction-scoped lock on the event's aggregate
 * ({@link Builder#lockAggregateOnAppend(boolean)}), so two transactions writing the same aggregate get
 * {@code created_at} in commit order and ordered mode can never publish them the wrong way round.
 */
public final class JdbcOutboxStore implements OutboxStore {
  public static final String DEFAULT_TABLE = "outbox";
  static final int CONTROL_RECHECK_SECONDS = 30;

  private static final Logger LOG = LoggerFactory.getLogger(JdbcOutboxStore.class);
  private static final Comparator<OutboxEvent> DISPATCH_ORDER = Comparator
      .comparingInt(OutboxEvent::priority).reversed() // not -priority: that overflows at Integer.MIN_VALUE
      .thenComparing(OutboxEvent::createdAt)
      .thenComparing(OutboxEvent::id, UuidV7.ORDER);

  private final DataSource dataSource;
  private final Dialect dialect;
  private final TableName tableName;
  private final String table;
  private final String lockTable;
  private final boolean lockAggregateOnAppend;
  private final TableAccess access;
  private final OutboxControl control;
  /** While the control table is missing: when to look for it again ({@link System#nanoTime()}). */
  private volatile long controlMissingUntil;
  private volatile boolean controlMissingReported;

  private JdbcOutboxStore(Builder b, Dialect dialect) {
    this.dataSource = b.dataSource;
    this.dialect = dialect;
    this.tableName = b.tableName;
    this.table = tableName.quoted(dialect.identifierQuote());
    this.lockTable = tableName.sibling("locks", dialect.identifierQuote());
    this.lockAggregateOnAppend = b.lockAggregateOnAppend;
    this.access = new TableAccess("outbox", dataSource, dialect, tableName);
    this.control = new OutboxControl(access);
  }

  public static Builder builder() {
    return new Builder();
  }

  public Dialect dialect() {
    return dialect;
  }

  /** The validated table name, as configured. */
  public String table() {
    return tableName.toString();
  }

  /** For {@link OutboxMaintenance}, {@link OutboxDeadLetters} and the archiver, which work on this store's table. */
  TableAccess access() {
    return access;
  }

  /**
   * Creates the table and its indexes if they are missing. Safe to call at every start: when everything
   * exists no DDL runs, so a runtime role with row rights only (SELECT, INSERT, UPDATE, DELETE) may call it.
   */
  public void createSchema() {
    boolean created = access.createSchema(dialect.schemaResource(), DEFAULT_TABLE);
    createControlSchema();
    LOG.info("outbox table {} {} ({})", tableName, created ? "ready" : "found", dialect.name());
  }

  /** The DDL of {@link Dialect#schemaResource()} for this store's table name, comments removed. */
  public String schemaDdl() {
    return access.ddl(dialect.schemaResource(), DEFAULT_TABLE);
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
    if (events.isEmpty()) {
      return;
    }
    try {
      String lockedInsert = events.size() == 1 && lockAggregateOnAppend ? dialect.insertLocked(table) : null;
      if (lockedInsert != null) {
        OutboxEvent event = events.iterator().next();
        try (PreparedStatement ps = connection.prepareStatement(lockedInsert)) {
          bindInsert(ps, event);
          ps.setString(8, lockKey(event));
          ps.executeUpdate();
        }
        return;
      }
      if (lockAggregateOnAppend) {
        List<String> keys = events.stream().map(JdbcOutboxStore::lockKey).distinct().sorted().toList();
        try (PreparedStatement lock = connection.prepareStatement(dialect.lockAggregates(lockTable, keys.size()))) {
          dialect.bindLockKeys(lock, keys);
          lock.execute();
        }
      }
      if (events.size() == 1) {
        try (PreparedStatement ps = connection.prepareStatement(dialect.insert(table))) {
          bindInsert(ps, events.iterator().next());
          ps.executeUpdate();
        }
      } else {
        insertBatch(connection, events);
      }
    } catch (SQLException e) {
      throw appendFailed(e, events);
    }
  }

  /**
   * Inserts a batch with one clock reading, taken after the aggregate locks: the i-th event gets that
   * time plus i microseconds, so the batch keeps the order given whatever its ids. Where the clock moves
   * on within a transaction, it then waits, if need be, until the clock has passed the last time given:
   * a later transaction on one of these aggregates reads its clock after this one commits, and so sorts
   * after the whole batch, as ordered mode requires.
   */
  private void insertBatch(Connection connection, Collection<OutboxEvent> events) throws SQLException {
    Instant start = readClock(connection);
    Instant last = start;
    try (PreparedStatement ps = connection.prepareStatement(dialect.insertAt(table))) {
      for (OutboxEvent e : events) {
        bindInsert(ps, e);
        dialect.setInstant(ps, 8, last);
        dialect.setInstant(ps, 9, start);
        ps.addBatch();
        last = last.plus(1, ChronoUnit.MICROS);
      }
      ps.executeBatch();
    }
    last = last.minus(1, ChronoUnit.MICROS);
    if (dialect.clockAdvancesInTransactions()) {
      for (Instant now = readClock(connection); !now.isAfter(last); now = readClock(connection)) {
        LockSupport.parkNanos(Duration.between(now, last).toNanos() + 1_000);
      }
    }
  }

  private Instant readClock(Connection connection) throws SQLException {
    try (Statement s = connection.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + dialect.statementClock())) {
      rs.next();
      return dialect.getInstant(rs, 1);
    }
  }

  @Override
  public List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder) {
    return fetchPending(limit, preserveAggregateOrder, Set.of());
  }

  @Override
  public List<OutboxEvent> fetchPending(int limit, boolean preserveAggregateOrder, Set<String> pausedTopics) {
    List<String> paused = List.copyOf(pausedTopics);
    return inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(
          dialect.fetchPending(table, preserveAggregateOrder, paused.size()))) {
        ps.setInt(bindTopics(ps, 1, paused), limit);
        return readAll(ps);
      }
    });
  }

  @Override
  public List<OutboxEvent> claim(String owner, int limit, Duration leaseTtl, boolean preserveAggregateOrder) {
    return claim(owner, limit, leaseTtl, preserveAggregateOrder, Set.of());
  }

  @Override
  public List<OutboxEvent> claim(String owner, int limit, Duration leaseTtl, boolean preserveAggregateOrder,
      Set<String> pausedTopics) {
    Objects.requireNonNull(owner, "owner");
    List<String> paused = List.copyOf(pausedTopics);
    List<OutboxEvent> claimed = dialect.updateReturning()
        ? inAutoCommit(c -> {
          try (PreparedStatement ps = c.prepareStatement(dialect.claim(table, preserveAggregateOrder, paused.size()))) {
            int next = bindTopics(ps, 1, paused);
            ps.setInt(next, limit);
            ps.setString(next + 1, owner);
            ps.setLong(next + 2, micros(leaseTtl));
            return readAll(ps);
          }
        })
        : inTransaction(c -> lockAndLease(c, owner, limit, leaseTtl, preserveAggregateOrder, paused));
    claimed.sort(DISPATCH_ORDER); // neither RETURNING nor IN (...) keeps an order
    return claimed;
  }

  /** The portable claim: lock and read claimable rows with SKIP LOCKED, then lease exactly those. */
  private List<OutboxEvent> lockAndLease(Connection c, String owner, int limit, Duration leaseTtl, boolean ordered,
      List<String> paused) throws SQLException {
    List<OutboxEvent> locked = new ArrayList<>();
    Instant dbNow = null;
    List<UUID> candidates = ordered ? headCandidates(c, limit, paused) : null;
    if (candidates != null && candidates.isEmpty()) {
      return locked;
    }
    // A head stays the head once read: new events sort after it, and only an operator's redrive can
    // bring an older event back to life.
    try (PreparedStatement ps = c.prepareStatement(ordered
        ? dialect.lockClaimableIds(table, candidates.size()) : dialect.lockClaimable(table, paused.size()))) {
      if (ordered) {
        bindIds(ps, 1, candidates);
      } else {
        ps.setInt(bindTopics(ps, 1, paused), limit);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          locked.add(EventRows.read(rs, dialect));
          dbNow = dialect.getInstant(rs, 16);
        }
      }
    }
    if (locked.isEmpty()) {
      return locked;
    }
    List<UUID> ids = locked.stream().map(OutboxEvent::id).toList();
    try (PreparedStatement ps = c.prepareStatement(dialect.lease(table, ids.size()))) {
      ps.setString(1, owner);
      ps.setLong(2, micros(leaseTtl));
      bindIds(ps, 3, ids);
      int leased = ps.executeUpdate();
      if (leased != ids.size()) {
        throw new OutboxStoreException("leased " + leased + " of " + ids.size() + " locked events in "
            + tableName + "; the claim was rolled back", null);
      }
    }
    Instant leaseUntil = dbNow.plus(leaseTtl);
    List<OutboxEvent> claimed = new ArrayList<>(locked.size());
    for (OutboxEvent e : locked) {
      claimed.add(e.toStored().status(OutboxStatus.PROCESSING).attempts(e.attempts() + 1)
          .lease(owner, leaseUntil).build());
    }
    return claimed;
  }

  /** Heads with their ids only, for runs: locked one by one as the run is leased. */
  private List<UUID> headCandidates(Connection c, int limit, List<String> paused) throws SQLException {
    return ids(c, dialect.headCandidates(table, paused.size()), ps -> ps.setInt(bindTopics(ps, 1, paused), limit));
  }

  private List<UUID> lockClaimableHeads(Connection c, int limit, List<String> paused) throws SQLException {
    List<UUID> candidates = headCandidates(c, limit, paused);
    return candidates.isEmpty() ? candidates
        : ids(c, dialect.lockClaimableIds(table, candidates.size()), ps -> bindIds(ps, 1, candidates));
  }

  private List<UUID> ids(Connection c, String statement, TableAccess.Binder binder) throws SQLException {
    List<UUID> ids = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(statement)) {
      binder.bind(ps);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          ids.add(dialect.getId(rs, 1));
        }
      }
    }
    return ids;
  }

  private List<OutboxEvent> lease(Connection c, String owner, Duration leaseTtl, List<UUID> ids) throws SQLException {
    if (ids.isEmpty()) {
      return new ArrayList<>();
    }
    try (PreparedStatement ps = c.prepareStatement(dialect.lease(table, ids.size()))) {
      ps.setString(1, owner);
      ps.setLong(2, micros(leaseTtl));
      bindIds(ps, 3, ids);
      ps.executeUpdate();
    }
    try (PreparedStatement ps = c.prepareStatement(dialect.selectLeased(table, ids.size()))) {
      ps.setString(bindIds(ps, 1, ids), owner);
      return readAll(ps);
    }
  }

  /**
   * The portable run claim: lock the heads, then, if the batch has room, read the due events behind each
   * (nobody else can claim them while their head is locked) and lease heads and followers together,
   * breadth first.
   */
  private List<OutboxEvent> lockAndLeaseRuns(Connection c, String owner, int limit, Duration leaseTtl, int maxRun,
      List<String> paused) throws SQLException {
    List<UUID> heads = lockClaimableHeads(c, limit, paused);
    List<List<UUID>> runs = new ArrayList<>();
    for (UUID head : heads) {
      runs.add(new ArrayList<>(List.of(head)));
    }
    if (!heads.isEmpty() && heads.size() < limit) {
      try (PreparedStatement ps = c.prepareStatement(dialect.followers(table, paused.size()))) {
        for (List<UUID> run : runs) {
          int next = bindTopics(ps, 1, paused);
          dialect.setId(ps, next, run.get(0));
          ps.setInt(next + 1, maxRun - 1);
          try (ResultSet rs = ps.executeQuery()) {
            while (rs.next() && rs.getInt(2) == 1) {
              run.add(dialect.getId(rs, 1));
            }
          }
        }
      }
    }
    List<UUID> picked = new ArrayList<>();
    for (int position = 0; picked.size() < limit; position++) {
      int before = picked.size();
      for (List<UUID> run : runs) {
        if (position < run.size() && picked.size() < limit) {
          picked.add(run.get(position));
        }
      }
      if (picked.size() == before) {
        break;
      }
    }
    return lease(c, owner, leaseTtl, picked);
  }

  @Override
  public List<OutboxEvent> claimRuns(String owner, int limit, Duration leaseTtl, int maxRun) {
    return claimRuns(owner, limit, leaseTtl, maxRun, Set.of());
  }

  @Override
  public List<OutboxEvent> claimRuns(String owner, int limit, Duration leaseTtl, int maxRun,
      Set<String> pausedTopics) {
    Objects.requireNonNull(owner, "owner");
    if (maxRun <= 1) {
      return claim(owner, limit, leaseTtl, true, pausedTopics);
    }
    List<String> paused = List.copyOf(pausedTopics);
    if (!dialect.updateReturning()) {
      return Runs.inWaves(inTransaction(c -> lockAndLeaseRuns(c, owner, limit, leaseTtl, maxRun, paused)));
    }
    List<OutboxEvent> claimed = inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.claimRuns(table, paused.size()))) {
        int next = bindTopics(ps, 1, paused);
        ps.setInt(next, limit);
        next = bindTopics(ps, next + 1, paused);
        ps.setInt(next, maxRun - 1);
        ps.setInt(next + 1, limit);
        ps.setString(next + 2, owner);
        ps.setLong(next + 3, micros(leaseTtl));
        return readAll(ps);
      }
    });
    return Runs.inWaves(claimed);
  }

  @Override
  public Set<UUID> markDispatched(Collection<OutboxEvent> events) {
    return forHeld(events, (owner, ids) -> dialect.updateReturning()
        ? returningIds(dialect.markDispatchedReturning(table, owner != null), ps -> {
          ps.setArray(1, uuidArray(ps, ids));
          if (owner != null) {
            ps.setString(2, owner);
          }
        })
        : owner != null ? markClaimed(owner, ids)
        : lockHeldThen(null, ids, held -> dialect.markDispatched(table, held, false), (ps, next) -> next));
  }

  /**
   * One fenced statement marks the whole batch; only when it changed fewer rows than asked (a lease was
   * lost) is it rolled back and redone the exact way, locking the rows still held first.
   */
  private Set<UUID> markClaimed(String owner, List<UUID> ids) {
    return inTransaction(c -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.markDispatchedFenced(table, ids.size()))) {
        ps.setString(bindIds(ps, 1, ids), owner);
        if (ps.executeUpdate() == ids.size()) {
          return new HashSet<>(ids);
        }
      }
      c.rollback();
      return markHeld(c, owner, ids, held -> dialect.markDispatched(table, held, true), (ps, next) -> next);
    });
  }

  @Override
  public boolean scheduleRetry(OutboxEvent event, Duration delay, String error) {
    boolean claimed = event.leaseOwner() != null;
    return update(dialect.scheduleRetry(table, claimed), ps -> {
      ps.setLong(1, micros(delay));
      ps.setString(2, error);
      dialect.setId(ps, 3, event.id());
      if (claimed) {
        ps.setString(4, event.leaseOwner());
      }
    }) == 1;
  }

  @Override
  public boolean markDead(OutboxEvent event, String error) {
    boolean claimed = event.leaseOwner() != null;
    return update(dialect.markDead(table, claimed), ps -> {
      ps.setString(1, error);
      dialect.setId(ps, 2, event.id());
      if (claimed) {
        ps.setString(3, event.leaseOwner());
      }
    }) == 1;
  }

  @Override
  public Set<UUID> release(Collection<OutboxEvent> events, Duration delay) {
    return forHeld(events, (owner, ids) -> dialect.updateReturning()
        ? returningIds(dialect.releaseReturning(table, owner != null), ps -> {
          ps.setLong(1, micros(delay));
          ps.setArray(2, uuidArray(ps, ids));
          if (owner != null) {
            ps.setString(3, owner);
          }
        })
        : lockHeldThen(owner, ids, held -> dialect.release(table, held, owner != null), (ps, next) -> {
          ps.setLong(next, micros(delay));
          return next + 1;
        }));
  }

  @Override
  public Set<UUID> renewLeases(Collection<OutboxEvent> events, Duration leaseTtl) {
    return forHeld(events, (owner, ids) -> {
      if (owner == null) {
        return Set.of(); // nothing to renew without a lease
      }
      return dialect.updateReturning()
          ? returningIds(dialect.renewReturning(table), ps -> {
            ps.setLong(1, micros(leaseTtl));
            ps.setArray(2, uuidArray(ps, ids));
            ps.setString(3, owner);
          })
          : lockHeldThen(owner, ids, held -> dialect.renew(table, held), (ps, next) -> {
            ps.setLong(next, micros(leaseTtl));
            return next + 1;
          });
    });
  }

  @Override
  public Optional<OutboxEvent> find(UUID id) {
    return inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.find(table))) {
        dialect.setId(ps, 1, id);
        return readAll(ps).stream().findFirst();
      }
    });
  }

  @Override
  public Map<OutboxStatus, Long> countByStatus() {
    return inAutoCommit(c -> {
      Map<OutboxStatus, Long> counts = new EnumMap<>(OutboxStatus.class);
      for (OutboxStatus s : OutboxStatus.values()) {
        counts.put(s, 0L);
      }
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(dialect.countByStatus(table))) {
        while (rs.next()) {
          counts.put(OutboxStatus.valueOf(rs.getString(1)), rs.getLong(2));
        }
      }
      return counts;
    });
  }

  @Override
  public Optional<Duration> oldestPendingAge() {
    return inAutoCommit(c -> {
      try (Statement s = c.createStatement();
          ResultSet rs = s.executeQuery(dialect.oldestPendingAgeMicros(table))) {
        rs.next();
        long micros = rs.getLong(1);
        return rs.wasNull() ? Optional.<Duration>empty()
            : Optional.of(Duration.of(Math.max(0, micros), ChronoUnit.MICROS));
      }
    });
  }

  // ------------------------------------------------------------------ cluster-wide pauses

  /** Creates the control table of cluster-wide pauses with the outbox table's, see {@link OutboxControl}. */
  private void createControlSchema() {
    try {
      control.createSchema();
    } catch (OutboxStoreException e) {
      // a runtime role without DDL rights must still start: pauses are then not honoured, and said so
      LOG.warn("outbox table {}: cannot create the control table {}, so cluster-wide pauses cannot be honoured"
          + " by this role; run createSchema() once as the schema's owner and grant SELECT on it: {}", tableName,
          tableName.derivedName("control"), e.getMessage());
    }
  }

  /**
   * The pauses in this outbox's control table ({@link OutboxControl}), read with one short query per call.
   * An outbox whose control table does not exist yet, or that this role cannot read, is not paused: that is
   * logged once at WARN, and the table is looked for again every {@value #CONTROL_RECHECK_SECONDS} seconds.
   */
  @Override
  public PauseState pauseState() {
    if (controlMissingUntil != 0 && System.nanoTime() - controlMissingUntil < 0) {
      return PauseState.NONE;
    }
    try {
      PauseState state = control.state();
      controlMissingUntil = 0;
      return state;
    } catch (OutboxStoreException e) {
      if (!OutboxControl.isUnusable(e)) {
        throw e;
      }
      controlMissingUntil = System.nanoTime() + Duration.ofSeconds(CONTROL_RECHECK_SECONDS).toNanos();
      if (!controlMissingReported) {
        controlMissingReported = true;
        LOG.warn("outbox table {}: the control table {} is missing or not readable by this role, so cluster-wide"
            + " pauses cannot be honoured; run createSchema() as the schema's owner and grant SELECT on it: {}",
            tableName, tableName.derivedName("control"), e.getMessage());
      }
      return PauseState.NONE;
    }
  }

  /** Moves every stored time back by {@code d}, as if {@code d} had passed. For tests only. */
  public void shiftTimesForTesting(Duration d) {
    update(dialect.shiftTimes(table), ps -> {
      for (int i = 1; i <= 4; i++) {
        ps.setLong(i, micros(d));
      }
    });
  }

  // ------------------------------------------------------------------ internals

  /** Runs {@code op} once per lease owner (null: unclaimed events) and collects the ids it changed. */
  private static Set<UUID> forHeld(Collection<OutboxEvent> events, HeldOp op) {
    Map<String, List<UUID>> groups = new LinkedHashMap<>();
    for (OutboxEvent e : events) {
      groups.computeIfAbsent(e.leaseOwner(), k -> new ArrayList<>()).add(e.id());
    }
    Set<UUID> changed = new HashSet<>();
    groups.forEach((owner, ids) -> changed.addAll(op.apply(owner, ids)));
    return changed;
  }

  /**
   * The portable mark: in one transaction, lock the events the caller still holds, then update exactly
   * those. {@code extra} binds the statement's leading parameters and returns the next index.
   */
  private Set<UUID> lockHeldThen(String owner, List<UUID> ids, IntFunction<String> statement, ExtraBinder extra) {
    return inTransaction(c -> markHeld(c, owner, ids, statement, extra));
  }

  private Set<UUID> markHeld(Connection c, String owner, List<UUID> ids, IntFunction<String> statement,
      ExtraBinder extra) throws SQLException {
    List<UUID> held = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(dialect.lockHeld(table, ids.size(), owner != null))) {
      int next = bindIds(ps, 1, ids);
      if (owner != null) {
        ps.setString(next, owner);
      }
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          held.add(dialect.getId(rs, 1));
        }
      }
    }
    if (!held.isEmpty()) {
      try (PreparedStatement ps = c.prepareStatement(statement.apply(held.size()))) {
        bindIds(ps, extra.bind(ps, 1), held);
        ps.executeUpdate();
      }
    }
    return new HashSet<>(held);
  }

  private static int bindTopics(PreparedStatement ps, int from, List<String> topics) throws SQLException {
    int i = from;
    for (String topic : topics) {
      ps.setString(i++, topic);
    }
    return i;
  }

  private int bindIds(PreparedStatement ps, int from, List<UUID> ids) throws SQLException {
    int i = from;
    for (UUID id : ids) {
      dialect.setId(ps, i++, id);
    }
    return i;
  }

  private static java.sql.Array uuidArray(PreparedStatement ps, List<UUID> ids) throws SQLException {
    return ps.getConnection().createArrayOf("uuid", ids.toArray());
  }

  private static void requireTransaction(Connection connection) {
    TableAccess.requireTransaction(connection, "append needs the caller's transaction, but the connection is in"
        + " auto-commit mode: the event would be committed apart from the business change. Call"
        + " connection.setAutoCommit(false), write the business change and the event, then commit");
  }


  private void bindInsert(PreparedStatement ps, OutboxEvent e) throws SQLException {
    dialect.setId(ps, 1, e.id());
    ps.setString(2, e.aggregateType());
    ps.setString(3, e.aggregateId());
    ps.setString(4, e.topic());
    ps.setString(5, e.payload());
    ps.setString(6, HeadersJson.write(e.headers()));
    ps.setInt(7, e.priority());
  }

  /** Length-prefixed so that no two distinct aggregates share a key. */
  private static String lockKey(OutboxEvent e) {
    return e.aggregateType().length() + ":" + e.aggregateType() + ":" + e.aggregateId();
  }

  private OutboxException appendFailed(SQLException e, Collection<OutboxEvent> events) {
    for (SQLException x = e; x != null; x = x.getNextException()) {
      if (dialect.isDuplicateKey(x)) {
        UUID id = events.size() == 1 ? events.iterator().next().id() : duplicateIn(x, events);
        if (id != null) {
          return new DuplicateEventException(id);
        }
      }
    }
    return new OutboxException("append of " + events.size() + " event(s) to " + tableName + " failed: "
        + e.getMessage() + " (SQLState " + e.getSQLState() + "); roll the transaction back", e);
  }

  private static UUID duplicateIn(SQLException e, Collection<OutboxEvent> events) {
    String text = String.valueOf(e.getMessage());
    return events.stream().map(OutboxEvent::id).filter(id -> text.contains(id.toString())).findFirst()
        .orElse(events.iterator().next().id());
  }

  private static long micros(Duration d) {
    return d.toNanos() / 1_000;
  }

  private List<OutboxEvent> readAll(PreparedStatement ps) throws SQLException {
    return EventRows.readAll(ps, dialect);
  }

  private int update(String statement, TableAccess.Binder binder) {
    return inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(statement)) {
        binder.bind(ps);
        return ps.executeUpdate();
      }
    });
  }

  private Set<UUID> returningIds(String statement, TableAccess.Binder binder) {
    return inAutoCommit(c -> {
      Set<UUID> ids = new HashSet<>();
      try (PreparedStatement ps = c.prepareStatement(statement)) {
        binder.bind(ps);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            ids.add(dialect.getId(rs, 1));
          }
        }
      }
      return ids;
    });
  }

  private <T> T inAutoCommit(TableAccess.Work<T> work) {
    return access.inAutoCommit(work);
  }

  private <T> T inTransaction(TableAccess.Work<T> work) {
    return access.inTransaction(work);
  }

  @FunctionalInterface
  private interface ExtraBinder {
    int bind(PreparedStatement ps, int from) throws SQLException;
  }

  @FunctionalInterface
  private interface HeldOp {
    Set<UUID> apply(String owner, List<UUID> ids);
  }

  /** Builds a {@link JdbcOutboxStore}; {@code dataSource} is required. */
  public static final class Builder {
    private DataSource dataSource;
    private TableName tableName = new TableName(null, DEFAULT_TABLE);
    private Dialect dialect;
    private boolean lockAggregateOnAppend = true;

    private Builder() {}

    /** Required; a pooled DataSource such as HikariCP's. */
    public Builder dataSource(DataSource dataSource) {
      this.dataSource = dataSource;
      return this;
    }

    /** The outbox table (default {@code outbox}); {@code [A-Za-z_][A-Za-z0-9_]*}, optionally {@code schema.table}. */
    public Builder table(String table) {
      this.tableName = TableName.parse("table", table);
      return this;
    }

    /** Overrides the dialect detected from the connection's metadata. */
    public Builder dialect(Dialect dialect) {
      this.dialect = dialect;
      return this;
    }

    /**
     * Take a transaction-scoped lock on each appended event's aggregate (default {@code true}). It makes
     * {@code created_at} follow commit order within an aggregate, which ordered mode relies on when two
     * transactions write the same aggregate concurrently. The lock is held until the caller's
     * transaction ends; turn it off only if you never use ordered mode or your producers already
     * serialize per aggregate and read the clock after that.
     */
    public Builder lockAggregateOnAppend(boolean lock) {
      this.lockAggregateOnAppend = lock;
      return this;
    }

    /**
     * @throws InvalidConfigurationException naming the option that is wrong
     * @throws UnsupportedDatabaseException if the database is not supported
     */
    public JdbcOutboxStore build() {
      if (dataSource == null) {
        throw new InvalidConfigurationException("dataSource is required: .dataSource(hikariDataSource)");
      }
      Dialect chosen = TableAccess.dialect(dataSource, dialect);
      if (dialect == null) {
        LOG.info("outbox table {}: detected dialect {}", tableName, chosen.name());
      }
      return new JdbcOutboxStore(this, chosen);
    }
  }
}
