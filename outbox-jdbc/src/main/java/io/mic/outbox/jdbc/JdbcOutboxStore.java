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
 *
 * <p>The event envelope: each event gets its aggregate's next {@code sequence} (1, 2, 3 …) from a small
 * counter table, {@code <table>_sequences}, upserted in the appending transaction, so a rollback takes
 * its numbers back and the committed ones have no gap; {@code schema_version}, {@code occurred_at} (the
 * builder's, else the append time) and {@code trace_parent} are stored beside it.
 */
public final class JdbcOutboxStore implements OutboxStore {
  public static final String DEFAULT_TABLE = "outbox";
  static final int CONTROL_RECHECK_SECONDS = 30;

  private static final Logger LOG = LoggerFactory.getLogger(JdbcOutboxStore.class);
  /** Aggregates counted per statement: keeps a huge batch under every driver's parameter limit. */
  private static final int MAX_COUNTED_AGGREGATES = 1_000;
  /** The columns of the event envelope; a table without them is upgraded by createSchema(). */
  private static final List<String> ENVELOPE_COLUMNS = List.of("sequence", "schema_version", "occurred_at",
      "trace_parent");
  private static final Comparator<OutboxEvent> DISPATCH_ORDER = Comparator
      .comparingInt(OutboxEvent::priority).reversed() // not -priority: that overflows at Integer.MIN_VALUE
      .thenComparing(OutboxEvent::createdAt)
      .thenComparing(OutboxEvent::id, UuidV7.ORDER);

  private final DataSource dataSource;
  private final Dialect givenDialect;
  private final TableName tableName;
  private final boolean lockAggregateOnAppend;
  // Set once by bind(), at build() or, if the database was down then, at the first use after it came up.
  private Dialect dialect;
  private String table;
  private String lockTable;
  /** The per-aggregate sequence counter, {@code <table>_sequences}. */
  private String sequenceTable;
  private TableAccess access;
  private OutboxControl control;
  private volatile boolean bound;
  /** While the control table is missing: when to look for it again ({@link System#nanoTime()}). */
  private volatile long controlMissingUntil;
  private volatile boolean controlMissingReported;

  private JdbcOutboxStore(Builder b) {
    this.dataSource = b.dataSource;
    this.givenDialect = b.dialect;
    this.tableName = b.tableName;
    this.lockAggregateOnAppend = b.lockAggregateOnAppend;
  }

  /** Detects the dialect unless known; every public method calls this first. Retried until it succeeds. */
  private void bind() {
    if (!bound) {
      bindNow();
    }
  }

  private synchronized void bindNow() {
    if (bound) {
      return;
    }
    Dialect chosen = TableAccess.dialect(dataSource, givenDialect);
    if (givenDialect == null) {
      LOG.info("outbox table {}: detected dialect {}", tableName, chosen.name());
    }
    dialect = chosen;
    table = tableName.quoted(chosen.identifierQuote());
    lockTable = tableName.sibling("locks", chosen.identifierQuote());
    sequenceTable = tableName.sibling("sequences", chosen.identifierQuote());
    access = new TableAccess("outbox", dataSource, chosen, tableName);
    control = new OutboxControl(access);
    bound = true; // volatile write last: a thread that reads it true sees the fields above
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
    bind();
    return dialect;
  }

  /** The validated table name, as configured. */
  public String table() {
    return tableName.toString();
  }

  /** For {@link OutboxMaintenance}, {@link OutboxDeadLetters} and the archiver, which work on this store's table. */
  TableAccess access() {
    bind();
    return access;
  }

  /**
   * Creates the table, its indexes and the tables beside it if they are missing, and upgrades a table
   * created before the event envelope ({@link Dialect#upgradeEnvelopeResource()}: the columns
   * {@code sequence}, {@code schema_version}, {@code occurred_at}, {@code trace_parent}) and the indexes of
   * a table created before the lean schema ({@link Dialect#upgradeIndexesResource()}). Safe to call at
   * every start: when everything exists no DDL runs, so a runtime role with row rights only (SELECT,
   * INSERT, UPDATE, DELETE) may call it.
   */
  public void createSchema() {
    bind();
    boolean created = access.createSchema(dialect.schemaResource(), DEFAULT_TABLE);
    boolean upgraded = access.upgrade(dialect.upgradeEnvelopeResource(), DEFAULT_TABLE, ENVELOPE_COLUMNS);
    boolean lean = dialect.upgradeIndexesResource() != null
        && access.upgradeIndexes(dialect.upgradeIndexesResource(), DEFAULT_TABLE, dialect.obsoleteIndexes());
    createControlSchema();
    LOG.info("outbox table {} {} ({})", tableName, upgraded ? "upgraded to the event envelope"
        : lean ? "upgraded to the lean indexes" : created ? "ready" : "found", dialect.name());
  }

  /** The upgrade script of {@link Dialect#upgradeEnvelopeResource()} for this store's table name, comments removed. */
  public String upgradeEnvelopeDdl() {
    bind();
    return access.ddl(dialect.upgradeEnvelopeResource(), DEFAULT_TABLE);
  }

  /**
   * The index upgrade of {@link Dialect#upgradeIndexesResource()} for this store's table name, comments
   * removed; empty where the dialect's indexes did not change.
   */
  public String upgradeIndexesDdl() {
    bind();
    String resource = dialect.upgradeIndexesResource();
    return resource == null ? "" : access.ddl(resource, DEFAULT_TABLE);
  }

  /** The DDL of {@link Dialect#schemaResource()} for this store's table name, comments removed. */
  public String schemaDdl() {
    bind();
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
    bind();
    if (events.isEmpty()) {
      return;
    }
    try {
      if (events.size() == 1) {
        appendOne(connection, events.iterator().next());
        return;
      }
      if (separateLock()) {
        lockAggregates(connection, events);
      }
      insertBatch(connection, events, countSequences(connection, events));
    } catch (SQLException e) {
      throw appendFailed(e, events);
    }
  }

  /** The common case, in as few statements as the database allows (one on PostgreSQL). */
  private void appendOne(Connection connection, OutboxEvent event) throws SQLException {
    String lockedInsert = separateLock() ? dialect.insertLocked(table, sequenceTable) : null;
    if (separateLock() && lockedInsert == null) {
      lockAggregates(connection, List.of(event));
    }
    if (!dialect.insertCountsSequence()) {
      countSequences(connection, List.of(event));
    }
    try (PreparedStatement ps = connection.prepareStatement(lockedInsert != null ? lockedInsert
        : dialect.insert(table, sequenceTable))) {
      bindInsert(ps, event);
      ps.setInt(8, event.schemaVersion());
      dialect.setInstantOrNull(ps, 9, event.occurredAt());
      ps.setString(10, event.traceParent());
      if (lockedInsert != null) {
        ps.setString(11, lockKey(event));
      }
      int inserted = ps.executeUpdate();
      if (inserted != 1) {
        throw new OutboxStoreException("append to " + tableName + " inserted " + inserted + " rows instead of 1:"
            + " the sequence counter of aggregate " + event.aggregateType() + "/" + event.aggregateId()
            + " is missing from " + tableName.derivedName("sequences") + "; roll the transaction back", null);
      }
    }
  }

  /**
   * Whether an append takes the aggregate lock apart from the sequence counter's row lock: not where the
   * counter's upsert already locks each aggregate until the transaction ends, before the clock is read
   * ({@link Dialect#counterLocksAggregates()}), which serialises the appends of an aggregate just the same.
   */
  private boolean separateLock() {
    return lockAggregateOnAppend && !dialect.counterLocksAggregates();
  }

  private void lockAggregates(Connection connection, Collection<OutboxEvent> events) throws SQLException {
    List<String> keys = events.stream().map(JdbcOutboxStore::lockKey).distinct().sorted().toList();
    try (PreparedStatement lock = connection.prepareStatement(dialect.lockAggregates(lockTable, keys.size()))) {
      dialect.bindLockKeys(lock, keys);
      lock.execute();
    }
  }

  /**
   * Counts the events of each aggregate into its row of the sequence table, in lock-key order (the row
   * locks are then taken in one order by every append, so two batches never deadlock on them), and returns
   * each aggregate's last sequence after the count: its events are numbered up to it, in the order given.
   * A rolled-back transaction takes its count back, so the committed numbers have no gap.
   */
  private Map<String, Long> countSequences(Connection connection, Collection<OutboxEvent> events)
      throws SQLException {
    Map<String, Long> counts = new java.util.TreeMap<>();
    Map<String, OutboxEvent> firsts = new java.util.HashMap<>();
    for (OutboxEvent e : events) {
      counts.merge(lockKey(e), 1L, Long::sum);
      firsts.putIfAbsent(lockKey(e), e);
    }
    Map<String, Long> last = new java.util.HashMap<>();
    List<String> keys = List.copyOf(counts.keySet());
    for (int from = 0; from < keys.size(); from += MAX_COUNTED_AGGREGATES) {
      List<String> chunk = keys.subList(from, Math.min(keys.size(), from + MAX_COUNTED_AGGREGATES));
      String read = dialect.readSequences(sequenceTable, chunk.size());
      String ensure = dialect.ensureSequences(sequenceTable, chunk.size());
      if (ensure != null) {
        try (PreparedStatement ps = connection.prepareStatement(ensure)) {
          bindAggregates(ps, chunk, firsts);
          ps.executeUpdate();
        }
      }
      try (PreparedStatement ps = connection.prepareStatement(dialect.countSequences(sequenceTable, chunk.size()))) {
        List<String> types = new ArrayList<>(chunk.size());
        List<String> ids = new ArrayList<>(chunk.size());
        List<Long> n = new ArrayList<>(chunk.size());
        for (String key : chunk) {
          OutboxEvent e = firsts.get(key);
          types.add(e.aggregateType());
          ids.add(e.aggregateId());
          n.add(counts.get(key));
        }
        dialect.bindSequenceCounts(ps, types, ids, n);
        if (read == null) {
          readSequences(ps, last);
        } else {
          ps.executeUpdate();
        }
      }
      if (read != null) {
        try (PreparedStatement ps = connection.prepareStatement(read)) {
          bindAggregates(ps, chunk, firsts);
          readSequences(ps, last);
        }
      }
    }
    for (String key : keys) {
      if (!last.containsKey(key)) {
        OutboxEvent e = firsts.get(key);
        throw new OutboxStoreException("the sequence counter of aggregate " + e.aggregateType() + "/"
            + e.aggregateId() + " was not found in " + tableName.derivedName("sequences") + " after counting;"
            + " roll the transaction back", null);
      }
    }
    Map<String, Long> first = new java.util.HashMap<>();
    last.forEach((key, value) -> first.put(key, value - counts.get(key) + 1));
    return first;
  }

  private static void bindAggregates(PreparedStatement ps, List<String> keys, Map<String, OutboxEvent> firsts)
      throws SQLException {
    int i = 1;
    for (String key : keys) {
      OutboxEvent e = firsts.get(key);
      ps.setString(i++, e.aggregateType());
      ps.setString(i++, e.aggregateId());
    }
  }

  private static void readSequences(PreparedStatement ps, Map<String, Long> last) throws SQLException {
    try (ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        String type = rs.getString(1);
        last.put(type.length() + ":" + type + ":" + rs.getString(2), rs.getLong(3));
      }
    }
  }

  /**
   * Inserts a batch with one clock reading, taken after the aggregate locks: the i-th event gets that
   * time plus i microseconds, so the batch keeps the order given whatever its ids. Where the clock moves
   * on within a transaction, it then waits, if need be, until the clock has passed the last time given:
   * a later transaction on one of these aggregates reads its clock after this one commits, and so sorts
   * after the whole batch, as ordered mode requires. {@code firstSequences} holds, per lock key, the
   * sequence of the aggregate's first event in the batch.
   */
  private void insertBatch(Connection connection, Collection<OutboxEvent> events, Map<String, Long> firstSequences)
      throws SQLException {
    Map<String, Long> next = new java.util.HashMap<>(firstSequences);
    Instant start = readClock(connection);
    Instant last = start;
    String arrays = dialect.insertArrays(table);
    if (arrays != null) {
      insertArrays(connection, arrays, events, next, start);
      last = start.plus(events.size(), ChronoUnit.MICROS);
    } else {
      last = insertEach(connection, events, next, start);
    }
    last = last.minus(1, ChronoUnit.MICROS);
    if (dialect.clockAdvancesInTransactions()) {
      for (Instant now = readClock(connection); !now.isAfter(last); now = readClock(connection)) {
        LockSupport.parkNanos(Duration.between(now, last).toNanos() + 1_000);
      }
    }
  }

  private void insertArrays(Connection connection, String sql, Collection<OutboxEvent> events, Map<String, Long> next,
      Instant start) throws SQLException {
    int n = events.size();
    Object[][] columns = new Object[11][n];
    int i = 0;
    for (OutboxEvent e : events) {
      columns[0][i] = e.id();
      columns[1][i] = e.aggregateType();
      columns[2][i] = e.aggregateId();
      columns[3][i] = e.topic();
      columns[4][i] = e.payload();
      columns[5][i] = HeadersJson.write(e.headers());
      columns[6][i] = e.priority();
      columns[7][i] = next.merge(lockKey(e), 1L, Long::sum) - 1;
      columns[8][i] = e.schemaVersion();
      columns[9][i] = e.occurredAt() == null ? null : e.occurredAt().toString(); // ISO-8601 in UTC: no zone to guess
      columns[10][i] = e.traceParent();
      i++;
    }
    String[] types = {"uuid", "varchar", "varchar", "varchar", "text", "text", "int4", "int8", "int4", "varchar",
        "varchar"};
    try (PreparedStatement ps = connection.prepareStatement(sql)) {
      for (int c = 0; c < columns.length; c++) {
        ps.setArray(c + 1, connection.createArrayOf(types[c], columns[c]));
      }
      dialect.setInstant(ps, 12, start);
      dialect.setInstant(ps, 13, start);
      int inserted = ps.executeUpdate();
      if (inserted != n) {
        throw new OutboxStoreException("append to " + tableName + " inserted " + inserted + " rows instead of " + n
            + "; roll the transaction back", null);
      }
    }
  }

  /** The portable batch: one JDBC batch of single-row inserts; returns the time after the last event's. */
  private Instant insertEach(Connection connection, Collection<OutboxEvent> events, Map<String, Long> next,
      Instant start) throws SQLException {
    Instant last = start;
    try (PreparedStatement ps = connection.prepareStatement(dialect.insertAt(table))) {
      for (OutboxEvent e : events) {
        bindInsert(ps, e);
        dialect.setInstant(ps, 8, last);
        dialect.setInstant(ps, 9, start);
        ps.setLong(10, next.merge(lockKey(e), 1L, Long::sum) - 1);
        ps.setInt(11, e.schemaVersion());
        dialect.setInstant(ps, 12, e.occurredAt() != null ? e.occurredAt() : last);
        ps.setString(13, e.traceParent());
        ps.addBatch();
        last = last.plus(1, ChronoUnit.MICROS);
      }
      ps.executeBatch();
    }
    return last;
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
    bind();
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
    bind();
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
          dbNow = dialect.getInstant(rs, 20);
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
    bind();
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
    bind();
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
    bind();
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
    bind();
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
    bind();
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
    bind();
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
    bind();
    return inAutoCommit(c -> {
      try (PreparedStatement ps = c.prepareStatement(dialect.find(table))) {
        dialect.setId(ps, 1, id);
        return readAll(ps).stream().findFirst();
      }
    });
  }

  @Override
  public Map<OutboxStatus, Long> countByStatus() {
    bind();
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
    bind();
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
    bind();
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
  void shiftTimesForTesting(Duration d) {
    bind();
    update(dialect.shiftTimes(table), ps -> {
      for (int i = 1; i <= 5; i++) {
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
     * transaction ends.
     *
     * <p>Every append also upserts its aggregate's row of the sequence counter ({@code <table>_sequences})
     * before it reads the clock, and that row stays locked until the transaction ends too. So with
     * {@code false}, appends to one aggregate are still serialised, and {@code sequence} and
     * {@code created_at} still follow commit order: {@code false} only saves the separate lock statement
     * (and, on MariaDB and H2, the {@code <table>_locks} table's rows). On PostgreSQL the counter's row
     * lock is the aggregate lock whatever this option says: no advisory lock is taken, so an append pays
     * no extra statement and takes no slot of the shared lock table.
     */
    public Builder lockAggregateOnAppend(boolean lock) {
      this.lockAggregateOnAppend = lock;
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
      if (dataSource == null) {
        throw new InvalidConfigurationException("dataSource is required: .dataSource(hikariDataSource)");
      }
      JdbcOutboxStore store = new JdbcOutboxStore(this);
      try {
        store.bindNow();
      } catch (OutboxStoreException e) {
        LOG.warn("outbox table {}: {}; the dialect will be detected on first use", tableName, e.getMessage());
      }
      return store;
    }
  }
}
