package io.mic.outbox.jdbc;

import io.mic.outbox.DuplicateEventException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.internal.AppendChannel;
import io.mic.outbox.jdbc.internal.Causes;
import io.mic.outbox.jdbc.internal.HeadersJson;
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
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.locks.LockSupport;

/**
 * Appends events inside the caller's transaction: lock their aggregates, count them into the per-aggregate
 * sequence counter ({@code <table>_sequences}), insert them with times from the database clock. The flow is
 * the same everywhere; each database's subclass ({@link PostgresAppend}, {@link MariaDbAppend},
 * {@link H2Append}) holds its statements.
 */
abstract class AppendStatements {
  /** Aggregates counted per statement: keeps a huge batch under every driver's parameter limit. */
  private static final int MAX_COUNTED_AGGREGATES = 1_000;

  final Dialect dialect;
  final Tables tables;

  AppendStatements(Dialect dialect, Tables tables) {
    this.dialect = dialect;
    this.tables = tables;
  }

  /**
   * The exception of an append that failed with {@code e}: a {@link DuplicateEventException} naming the id
   * when an event's id exists, else one that quotes no value of the rows (the details may quote the payload).
   */
  OutboxException failed(SQLException e, Collection<OutboxEvent> events, TableName table) {
    for (SQLException x = e; x != null; x = x.getNextException()) {
      if (dialect.isDuplicateKey(x)) {
        UUID id = events.size() == 1 ? events.iterator().next().id() : duplicateIn(x, events);
        if (id != null) {
          return new DuplicateEventException(id);
        }
      }
    }
    SQLException refused = Causes.withoutValues(e);
    return new OutboxException("append of " + events.size() + " event(s) to " + table + " failed: "
        + refused.getMessage() + " (SQLState " + e.getSQLState() + "); roll the transaction back", refused);
  }

  private static UUID duplicateIn(SQLException e, Collection<OutboxEvent> events) {
    String text = String.valueOf(e.getMessage());
    return events.stream().map(OutboxEvent::id).filter(id -> text.contains(id.toString())).findFirst()
        .orElse(events.iterator().next().id());
  }

  // ------------------------------------------------------------------ what differs per database

  /**
   * Locks {@code keys} aggregates, in the order bound (sorted lock keys), until the transaction ends;
   * {@code null} where {@link #countSequences} locks each aggregate's counter row, in lock-key order,
   * before the clock is read: that row lock then serialises an aggregate's appends just the same, without
   * a statement of its own.
   */
  abstract String lockAggregates(int keys);

  /**
   * Adds {@code counts} events to the counters of {@code aggregates} (an event of each), creating a row at 0
   * first, and locking the rows in the order given until the transaction ends. When {@link #readSequences}
   * is {@code null} it returns rows (aggregate_type, aggregate_id, last_sequence).
   */
  abstract Sql countSequences(Connection c, List<OutboxEvent> aggregates, List<Long> counts) throws SQLException;

  /** Creates the missing counter rows at 0 before {@link #countSequences}; {@code null} when that creates them. */
  Sql ensureSequences(List<OutboxEvent> aggregates) {
    return null;
  }

  /**
   * Reads the counters just counted, as rows (aggregate_type, aggregate_id, last_sequence); {@code null}
   * when {@link #countSequences} returns them.
   */
  Sql readSequences(List<OutboxEvent> aggregates) {
    return Sql.of("SELECT aggregate_type, aggregate_id, last_sequence FROM " + tables.sequences()
        + " WHERE (aggregate_type, aggregate_id) IN (" + Sql.repeat(aggregates.size(), "(?, ?)") + ")",
        typesAndIds(aggregates, null));
  }

  /** Each aggregate's type and id, and its count when {@code counts} is not {@code null}. */
  static Object[] typesAndIds(List<OutboxEvent> aggregates, List<Long> counts) {
    List<Object> values = new ArrayList<>(aggregates.size() * 3);
    for (int k = 0; k < aggregates.size(); k++) {
      values.add(aggregates.get(k).aggregateType());
      values.add(aggregates.get(k).aggregateId());
      if (counts != null) {
        values.add(counts.get(k));
      }
    }
    return values.toArray();
  }

  /**
   * Inserts one event, counted already: {@code created_at} and {@code next_attempt_at} from the database
   * clock, {@code sequence} its aggregate's counter.
   */
  abstract Sql insert(OutboxEvent e);

  /**
   * Inserts one event of a batch at {@code createdAt}, due at {@code due}, numbered {@code sequence}, so that
   * the events of a batch get distinct, increasing {@code created_at} in the order given. Its text is the
   * same for every event: the batch is one JDBC batch.
   */
  Sql insertAt(OutboxEvent e, Instant createdAt, Instant due, long sequence) {
    return Sql.of("INSERT INTO " + tables.outbox() + " (" + Sql.INSERT_COLUMNS + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?,"
        + " ?, ?, ?, ?)", e.id(), e.aggregateType(), e.aggregateId(), e.topic(), e.payload(),
        HeadersJson.write(e.headers()), e.priority(), createdAt, due, sequence, e.schemaVersion(),
        e.occurredAt() != null ? e.occurredAt() : createdAt, Sql.orNull(e.traceParent(), String.class));
  }

  /**
   * Whether {@link Dialect#statementClock()} moves on within a transaction. When it does, a batch append
   * waits, if it must, until the clock has passed the last time it gave, so that a later transaction on the
   * same aggregate reads a later time. When it does not (H2), {@link #insertAt} itself must place each event
   * after the latest event of its aggregate.
   */
  boolean clockAdvancesInTransactions() {
    return true;
  }

  // ------------------------------------------------------------------ the flow

  /**
   * Appends {@code events} in the order given and, unless {@code channel} is {@code null}, announces them on
   * it in the same transaction (delivered at commit, once per call). Their aggregates are locked first
   * where the database has a lock statement.
   */
  void append(Connection connection, Collection<OutboxEvent> events, AppendChannel channel) throws SQLException {
    if (lockAggregates(1) != null) {
      lockAggregates(connection, events);
    }
    appendCounted(connection, events, channel);
  }

  /**
   * {@link #append} after the lock: the counter's row locks, taken before the clock is read, serialise each
   * aggregate's appends from here on, with or without the lock statement before.
   */
  void appendCounted(Connection connection, Collection<OutboxEvent> events, AppendChannel channel)
      throws SQLException {
    if (events.size() == 1) {
      appendOne(connection, events.iterator().next(), channel);
      return;
    }
    insertBatch(connection, events, countSequences(connection, events));
    if (channel != null) {
      channel.notifyIn(connection);
    }
  }

  /**
   * The common case, one event, in as few statements as the database allows. The portable form announces
   * it on {@code channel} (unless {@code null}) with a statement of its own.
   */
  void appendOne(Connection connection, OutboxEvent event, AppendChannel channel) throws SQLException {
    countSequences(connection, List.of(event));
    try (PreparedStatement ps = insert(event).prepare(connection, dialect)) {
      requireOneRow(ps.executeUpdate(), event);
    }
    if (channel != null) {
      channel.notifyIn(connection);
    }
  }

  void lockAggregates(Connection connection, Collection<OutboxEvent> events) throws SQLException {
    List<String> keys = events.stream().map(AppendStatements::lockKey).distinct().sorted().toList();
    try (PreparedStatement lock = Sql.of(lockAggregates(keys.size()), keys.toArray()).prepare(connection, dialect)) {
      lock.execute();
    }
  }

  void requireOneRow(int inserted, OutboxEvent event) {
    if (inserted != 1) {
      throw new OutboxStoreException("append to " + tables.name() + " inserted " + inserted + " rows instead of 1:"
          + " the sequence counter of aggregate " + event.aggregateType() + "/" + event.aggregateId()
          + " is missing from " + tables.name().derivedName("sequences") + "; roll the transaction back", null);
    }
  }

  /**
   * Counts the events of each aggregate into its row of the sequence table, in lock-key order (the row
   * locks are then taken in one order by every append, so two batches never deadlock on them), and returns,
   * per lock key, the sequence of the aggregate's first event here: its events are numbered from it, in the
   * order given. A rolled-back transaction takes its count back, so the committed numbers have no gap.
   */
  Map<String, Long> countSequences(Connection connection, Collection<OutboxEvent> events) throws SQLException {
    Map<String, Long> counts = new TreeMap<>();
    Map<String, OutboxEvent> firsts = new HashMap<>();
    for (OutboxEvent e : events) {
      counts.merge(lockKey(e), 1L, Long::sum);
      firsts.putIfAbsent(lockKey(e), e);
    }
    Map<String, Long> last = new HashMap<>();
    List<String> keys = List.copyOf(counts.keySet());
    for (int from = 0; from < keys.size(); from += MAX_COUNTED_AGGREGATES) {
      List<String> chunk = keys.subList(from, Math.min(keys.size(), from + MAX_COUNTED_AGGREGATES));
      List<OutboxEvent> aggregates = chunk.stream().map(firsts::get).toList();
      Sql read = readSequences(aggregates);
      Sql ensure = ensureSequences(aggregates);
      if (ensure != null) {
        try (PreparedStatement ps = ensure.prepare(connection, dialect)) {
          ps.executeUpdate();
        }
      }
      Sql count = countSequences(connection, aggregates, chunk.stream().map(counts::get).toList());
      try (PreparedStatement ps = count.prepare(connection, dialect)) {
        if (read == null) {
          readSequences(ps, last);
        } else {
          ps.executeUpdate();
        }
      }
      if (read != null) {
        try (PreparedStatement ps = read.prepare(connection, dialect)) {
          readSequences(ps, last);
        }
      }
    }
    for (String key : keys) {
      if (!last.containsKey(key)) {
        OutboxEvent e = firsts.get(key);
        throw new OutboxStoreException("the sequence counter of aggregate " + e.aggregateType() + "/"
            + e.aggregateId() + " was not found in " + tables.name().derivedName("sequences") + " after counting;"
            + " roll the transaction back", null);
      }
    }
    Map<String, Long> first = new HashMap<>();
    last.forEach((key, value) -> first.put(key, value - counts.get(key) + 1));
    return first;
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
   * Inserts a batch with one clock reading, taken after the aggregate locks: the i-th event gets that time
   * plus i microseconds, so the batch keeps the order given whatever its ids. Where the clock moves on
   * within a transaction, it then waits, if need be, until the clock has passed the last time given: a
   * later transaction on one of these aggregates reads its clock after this one commits, and so sorts after
   * the whole batch, as ordered mode requires.
   */
  private void insertBatch(Connection connection, Collection<OutboxEvent> events, Map<String, Long> firstSequences)
      throws SQLException {
    Map<String, Long> next = new HashMap<>(firstSequences);
    Instant start = readClock(connection);
    Instant last = insertRows(connection, events, next, start).minus(1, ChronoUnit.MICROS);
    if (clockAdvancesInTransactions()) {
      for (Instant now = readClock(connection); !now.isAfter(last); now = readClock(connection)) {
        LockSupport.parkNanos(Duration.between(now, last).toNanos() + 1_000);
      }
    }
  }

  /**
   * Inserts the rows of a batch from {@code start} on, each event's sequence taken from {@code next} (per
   * lock key, counted up); returns the time after the last event's. The portable form: one JDBC batch of
   * {@link #insertAt}.
   */
  Instant insertRows(Connection connection, Collection<OutboxEvent> events, Map<String, Long> next, Instant start)
      throws SQLException {
    Instant last = start;
    List<Sql> rows = new ArrayList<>(events.size());
    for (OutboxEvent e : events) {
      rows.add(insertAt(e, last, start, nextSequence(next, e)));
      last = last.plus(1, ChronoUnit.MICROS);
    }
    try (PreparedStatement ps = connection.prepareStatement(rows.get(0).text())) {
      for (Sql row : rows) {
        row.bind(ps, dialect);
        ps.addBatch();
      }
      ps.executeBatch();
    }
    return last;
  }

  static long nextSequence(Map<String, Long> next, OutboxEvent e) {
    return next.merge(lockKey(e), 1L, Long::sum) - 1;
  }

  private Instant readClock(Connection connection) throws SQLException {
    try (Statement s = connection.createStatement();
        ResultSet rs = s.executeQuery("SELECT " + dialect.statementClock())) {
      rs.next();
      return dialect.getInstant(rs, 1);
    }
  }

  /** Length-prefixed so that no two distinct aggregates share a key. */
  static String lockKey(OutboxEvent e) {
    return e.aggregateType().length() + ":" + e.aggregateType() + ":" + e.aggregateId();
  }
}
