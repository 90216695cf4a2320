package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Collections;
import java.util.List;
import java.util.UUID;

/**
 * What differs between databases: capabilities, SQL fragments and the text of each statement. The
 * defaults here are the portable form (claim by {@code SELECT … FOR UPDATE SKIP LOCKED}, then
 * {@code UPDATE} in the same transaction); each database's class overrides only what differs.
 * {@link #detect(DatabaseMetaData)} picks one from the connection, and
 * {@code JdbcOutboxStore.builder().dialect(...)} overrides the choice.
 *
 * <p>Statements receive table names already validated and quoted; every value is a bind parameter in the
 * order documented on each method. The outbox table's alias is {@code o} where one is used.
 */
public interface Dialect {

  /** PostgreSQL 12 or later: claims and batched marks in one statement each. */
  Dialect POSTGRESQL = new PostgresDialect();
  /** MariaDB 10.6 or later, and MySQL 8.0.16 or later. */
  Dialect MARIADB = new MariaDbDialect();
  /** H2 2.x, in process: for tests and demos. */
  Dialect H2 = new H2Dialect();

  /** Picks the dialect for a database, or fails naming the database and what is supported. */
  static Dialect detect(DatabaseMetaData meta) throws SQLException {
    String product = meta.getDatabaseProductName();
    int major = meta.getDatabaseMajorVersion();
    int minor = meta.getDatabaseMinorVersion();
    String found = product + " " + meta.getDatabaseProductVersion();
    if ("PostgreSQL".equalsIgnoreCase(product)) {
      return require(POSTGRESQL, major >= 12, found, "PostgreSQL 12 or later (SKIP LOCKED, MATERIALIZED CTEs)");
    }
    if ("MariaDB".equalsIgnoreCase(product)) {
      return require(MARIADB, major > 10 || (major == 10 && minor >= 6), found, "MariaDB 10.6 or later (SKIP LOCKED)");
    }
    if ("MySQL".equalsIgnoreCase(product)) {
      return require(MARIADB, major >= 8, found, "MySQL 8.0.16 or later (SKIP LOCKED, CHECK constraints)");
    }
    if ("H2".equalsIgnoreCase(product)) {
      return require(H2, major >= 2, found, "H2 2.x");
    }
    throw new UnsupportedDatabaseException("database " + found + " is not supported: MIC Outbox supports"
        + " PostgreSQL 12+, MariaDB 10.6+, MySQL 8.0.16+ and H2 2.x; pass .dialect(...) to use your own Dialect");
  }

  private static Dialect require(Dialect dialect, boolean supported, String found, String needed) {
    if (!supported) {
      throw new UnsupportedDatabaseException(found + " is too old: MIC Outbox needs " + needed);
    }
    return dialect;
  }

  /** A short name for logs and errors, e.g. {@code PostgreSQL}. */
  String name();

  /** Classpath location of the DDL for the default table name {@code outbox}. */
  String schemaResource();

  /**
   * Lists, as rows (table name, index name), the indexes of the named tables in one schema, each table with
   * at least its primary key; {@code createSchema()} runs no DDL when every table and index exists. Returns
   * {@code null} when the database's catalog is not known, and {@code createSchema()} then always runs the
   * DDL. Parameters: the schema (null: the connection's current one), then the {@code tables} names.
   */
  default String listIndexes(int tables) {
    return null;
  }

  /** The character that quotes identifiers. */
  default char identifierQuote() {
    return '"';
  }

  // ------------------------------------------------------------------ capabilities

  /**
   * {@code true} when a claim and a batched mark each run as one {@code UPDATE … RETURNING} statement
   * ({@link #claim}, {@link #claimRuns}, {@link #markDispatchedReturning}, …); {@code false} for the
   * portable lock-then-update transactions.
   */
  default boolean updateReturning() {
    return false;
  }

  /** Whether appends lock aggregates through the {@code <table>_locks} table rather than the database's own locks. */
  default boolean usesLockTable() {
    return true;
  }

  /** Isolation of the store's own transactions: READ COMMITTED keeps InnoDB from taking gap locks. */
  default int isolation() {
    return Connection.TRANSACTION_READ_COMMITTED;
  }

  /** Whether this failure is a unique-key violation (a duplicate event id). */
  default boolean isDuplicateKey(SQLException e) {
    return "23505".equals(e.getSQLState());
  }

  // ------------------------------------------------------------------ values

  default void setId(PreparedStatement ps, int index, UUID id) throws SQLException {
    ps.setObject(index, id);
  }

  default UUID getId(ResultSet rs, int index) throws SQLException {
    return rs.getObject(index, UUID.class);
  }

  default Instant getInstant(ResultSet rs, int index) throws SQLException {
    OffsetDateTime t = rs.getObject(index, OffsetDateTime.class);
    return t == null ? null : t.toInstant();
  }

  /** Binds the sorted, distinct lock keys of {@link #lockAggregates}. */
  default void bindLockKeys(PreparedStatement ps, List<String> keys) throws SQLException {
    for (int i = 0; i < keys.size(); i++) {
      ps.setString(i + 1, keys.get(i));
    }
  }

  // ------------------------------------------------------------------ fragments

  /** The database clock (for reads, leases and delays). */
  String now();

  /** {@code ts} plus a bound number of microseconds. */
  String plusMicros(String ts);

  /** {@code ts} minus a bound number of microseconds. */
  String minusMicros(String ts);

  /** Microseconds from {@code ts} to the database clock. */
  String microsSince(String ts);

  /** A bound JSON text as a value of the payload and headers columns. */
  default String jsonParam() {
    return "?";
  }

  /** The claim and fetch order; it must match the claim index. */
  default String dispatchOrder() {
    return "o.priority DESC, o.created_at, o.id";
  }

  /** A cheap filter on live rows that lets the claim index be used, or an empty string. */
  default String liveRows() {
    return "";
  }

  /** Excludes {@code n} paused topics, bound as parameters; empty when none are paused. */
  default String skipTopics(String alias, int n) {
    return n == 0 ? "" : " AND " + alias + ".topic NOT IN " + placeholders(n);
  }

  /** Only the oldest live event of its aggregate: a leased or retry-waiting head hides the rest. */
  default String isHead(String table) {
    return " AND NOT EXISTS (SELECT 1 FROM " + table + " p WHERE p.aggregate_type = o.aggregate_type"
        + " AND p.aggregate_id = o.aggregate_id AND p.status IN ('PENDING', 'PROCESSING')"
        + " AND (p.created_at, p.id) < (o.created_at, o.id))";
  }

  default String due() {
    return "o.status = 'PENDING' AND o.next_attempt_at <= " + now();
  }

  default String claimable() {
    return "((o.status = 'PENDING' AND o.next_attempt_at <= " + now() + ")"
        + " OR (o.status = 'PROCESSING' AND o.lease_until < " + now() + "))";
  }

  // ------------------------------------------------------------------ appends

  /**
   * Inserts one event, {@code created_at} and {@code next_attempt_at} from the database clock read after
   * the aggregate lock and the sequence count, {@code occurred_at} the given time or that same reading,
   * {@code sequence} the aggregate's counter in {@code sequences} (counted first by {@link #countSequences},
   * unless {@link #insertCountsSequence()}). Parameters: id, aggregate_type, aggregate_id, topic, payload,
   * headers, priority, schema_version, occurred_at (nullable), trace_parent.
   */
  String insert(String table, String sequences);

  /**
   * One statement that locks the event's aggregate and then inserts it, saving a round trip on the most
   * common append (one event per business transaction); {@code null} when the database needs the separate
   * {@link #lockAggregates} statement. Parameters: as {@link #insert}, then the aggregate's lock key.
   */
  default String insertLocked(String table, String sequences) {
    return null;
  }

  /**
   * Inserts one event of a batch with its times and sequence given, so that the events of a batch get
   * distinct, increasing {@code created_at} in the order given: one clock reading for a whole batch would
   * tie them, and ties sort by id. Parameters: as {@link #insert} up to priority, then created_at,
   * next_attempt_at, sequence, schema_version, occurred_at, trace_parent.
   */
  default String insertAt(String table) {
    return "INSERT INTO " + table + " (" + INSERT_COLUMNS + ") VALUES (?, ?, ?, ?, " + jsonParam() + ", "
        + jsonParam() + ", ?, ?, ?, ?, ?, ?, ?)";
  }

  /**
   * A whole batch in one statement with one array parameter per column, or {@code null} where the
   * database has no arrays (the batch then runs {@link #insertAt} once per event). Parameters: created_at
   * of the first event (the i-th gets it plus i microseconds), then arrays of id, aggregate_type,
   * aggregate_id, topic, payload, headers, priority, sequence, schema_version, occurred_at (elements may be
   * null: the event's created_at), trace_parent.
   */
  default String insertArrays(String table) {
    return null;
  }

  /**
   * The database clock as it reads when the statement runs, even late in a long transaction; a batch's
   * times start from it. H2 has none: its clock stands still within a transaction, see
   * {@link #clockAdvancesInTransactions()}.
   */
  default String statementClock() {
    return now();
  }

  /**
   * Whether {@link #statementClock()} moves on within a transaction. When it does, a batch append waits, if
   * it must, until the clock has passed the last time it gave, so that a later transaction on the same
   * aggregate reads a later time. When it does not (H2), {@link #insertAt} itself must place each event
   * after the latest event of its aggregate.
   */
  default boolean clockAdvancesInTransactions() {
    return true;
  }

  /** Locks {@code keys} aggregates, in the order bound, until the transaction ends. */
  String lockAggregates(String lockTable, int keys);

  // ------------------------------------------------------------------ the envelope: sequences and upgrade

  /** Classpath location of the script that upgrades an outbox table of the shape before the envelope. */
  default String upgradeEnvelopeResource() {
    return schemaResource().replace(".sql", "-upgrade-envelope.sql");
  }

  /**
   * Classpath location of the script that replaces the indexes of a table created before the lean schema
   * (see {@link #obsoleteIndexes()}), or {@code null} when the dialect's indexes did not change.
   */
  default String upgradeIndexesResource() {
    return null;
  }

  /** The derived names ({@code aggregate_idx}) of indexes that {@link #upgradeIndexesResource()} replaces. */
  default List<String> obsoleteIndexes() {
    return List.of();
  }

  /**
   * The order in which retention (purge and archive) takes {@code DISPATCHED} rows: it must match an index,
   * so that a batch stops at its limit.
   */
  default String retentionOrder() {
    return "dispatched_at, id";
  }

  /**
   * Lists the column names of one table, for {@code createSchema()} to tell whether the envelope upgrade is
   * needed; {@code null} when the catalog is not known (the upgrade then always runs). Parameters: the
   * schema (null: the connection's current one), the table.
   */
  default String listColumns() {
    return null;
  }

  /**
   * Whether the sequence counter's upsert ({@link #countSequences}, or {@link #insert} when it counts)
   * locks each aggregate's counter row, in the order bound, until the transaction ends and before the
   * clock is read: the aggregate lock of {@code lockAggregateOnAppend} is then not taken apart.
   */
  default boolean counterLocksAggregates() {
    return false;
  }

  /** Whether {@link #insert} counts the event in the sequence table itself (no {@link #countSequences} first). */
  default boolean insertCountsSequence() {
    return false;
  }

  /**
   * Adds, for each of {@code aggregates} aggregates, a number of events to its counter in the sequence
   * table, creating the row at 0 first; the row stays locked until the transaction ends. Parameters, per
   * aggregate in the order to lock them: aggregate_type, aggregate_id, count. When
   * {@link #readSequences} is {@code null} it returns rows (aggregate_type, aggregate_id, last_sequence).
   */
  String countSequences(String sequences, int aggregates);

  /**
   * Binds the parameters of {@link #countSequences}: the aggregates, in the order to lock them, and the
   * number of events of each. The portable form binds (type, id, count) per aggregate.
   */
  default void bindSequenceCounts(PreparedStatement ps, List<String> types, List<String> ids, List<Long> counts)
      throws SQLException {
    int i = 1;
    for (int k = 0; k < types.size(); k++) {
      ps.setString(i++, types.get(k));
      ps.setString(i++, ids.get(k));
      ps.setLong(i++, counts.get(k));
    }
  }

  /**
   * Creates the missing rows of {@code aggregates} aggregates in the sequence table, at 0, before
   * {@link #countSequences}; {@code null} when that statement creates them itself, as an upsert that is
   * safe against a concurrent first append does. Parameters, per aggregate: aggregate_type, aggregate_id.
   */
  default String ensureSequences(String sequences, int aggregates) {
    return null;
  }

  /**
   * Reads the counters just counted, as rows (aggregate_type, aggregate_id, last_sequence); {@code null}
   * when {@link #countSequences} returns them. Parameters, per aggregate: aggregate_type, aggregate_id.
   */
  default String readSequences(String sequences, int aggregates) {
    return "SELECT aggregate_type, aggregate_id, last_sequence FROM " + sequences
        + " WHERE (aggregate_type, aggregate_id) IN (" + String.join(", ", Collections.nCopies(aggregates, "(?, ?)"))
        + ")";
  }

  /** Binds an instant, or SQL NULL, to a parameter of a time column. */
  default void setInstantOrNull(PreparedStatement ps, int index, Instant instant) throws SQLException {
    if (instant == null) {
      ps.setNull(index, java.sql.Types.TIMESTAMP_WITH_TIMEZONE);
    } else {
      setInstant(ps, index, instant);
    }
  }

  // ------------------------------------------------------------------ dispatch, portable form

  /** Reads due {@code PENDING} events. Parameter: limit. */
  default String fetchPending(String table, boolean ordered) {
    return fetchPending(table, ordered, 0);
  }

  /** Reads due {@code PENDING} events of topics not paused. Parameters: the paused topics, limit. */
  default String fetchPending(String table, boolean ordered, int pausedTopics) {
    return "SELECT " + COLUMNS + " FROM " + table + " o WHERE " + liveRows() + due() + skipTopics("o", pausedTopics)
        + (ordered ? isHead(table) : "") + " ORDER BY " + dispatchOrder() + " LIMIT ?";
  }

  /**
   * Locks claimable events, skipping those another claim holds, and reads them with the database clock
   * as a twentieth column. Parameter: limit.
   */
  default String lockClaimable(String table) {
    return lockClaimable(table, 0);
  }

  /** As {@link #lockClaimable(String)}, skipping paused topics. Parameters: the paused topics, limit. */
  default String lockClaimable(String table, int pausedTopics) {
    return "SELECT " + aliased("o.") + ", " + now() + " FROM " + table + " o WHERE " + liveRows() + claimable()
        + skipTopics("o", pausedTopics) + " ORDER BY " + dispatchOrder() + " LIMIT ? FOR UPDATE SKIP LOCKED";
  }

  /**
   * Reads, without locking, the claimable heads of aggregates. A locking read would also lock every row
   * the head probe reads (InnoDB has no {@code FOR UPDATE OF}), so heads are locked afterwards by
   * {@link #lockClaimableIds}. Parameter: limit.
   */
  default String headCandidates(String table) {
    return headCandidates(table, 0);
  }

  /** As {@link #headCandidates(String)}, skipping paused topics. Parameters: the paused topics, limit. */
  default String headCandidates(String table, int pausedTopics) {
    return "SELECT o.id FROM " + table + " o WHERE " + liveRows() + claimable() + skipTopics("o", pausedTopics)
        + isHead(table) + " ORDER BY " + dispatchOrder() + " LIMIT ?";
  }

  /**
   * Locks and reads (as {@link #lockClaimable}) those of the given events that are still claimable,
   * skipping held ones. Parameters: the ids.
   */
  default String lockClaimableIds(String table, int ids) {
    return "SELECT " + aliased("o.") + ", " + now() + " FROM " + table + " o WHERE o.id IN " + placeholders(ids)
        + " AND " + claimable() + " FOR UPDATE SKIP LOCKED";
  }

  /**
   * The live events behind a head, in order, with a flag telling whether each is a due {@code PENDING}
   * event (a run stops at the first that is not). Parameters: the head's id, the most to return.
   */
  default String followers(String table) {
    return followers(table, 0);
  }

  /**
   * As {@link #followers(String)}, a paused topic ending the run. Parameters: the paused topics, the
   * head's id, the most to return.
   */
  default String followers(String table, int pausedTopics) {
    return "SELECT m.id, CASE WHEN m.status = 'PENDING' AND m.next_attempt_at <= " + now()
        + skipTopics("m", pausedTopics) + " THEN 1 ELSE 0 END"
        + " FROM " + table + " m JOIN " + table + " h ON h.id = ?"
        + " WHERE m.aggregate_type = h.aggregate_type AND m.aggregate_id = h.aggregate_id"
        + " AND m.status IN ('PENDING', 'PROCESSING') AND (m.created_at, m.id) > (h.created_at, h.id)"
        + " ORDER BY m.created_at, m.id LIMIT ?";
  }

  /**
   * Leases the chosen events, checking each is still claimable. Parameters: lease owner, lease micros,
   * then the ids.
   */
  default String lease(String table, int ids) {
    return "UPDATE " + table + " o SET status = 'PROCESSING', attempts = attempts + 1, lease_owner = ?,"
        + " lease_until = " + plusMicros(now()) + " WHERE id IN " + placeholders(ids) + " AND " + claimable();
  }

  /** Reads the events a claim leased. Parameters: the ids, then the lease owner. */
  default String selectLeased(String table, int ids) {
    return "SELECT " + COLUMNS + " FROM " + table + " WHERE id IN " + placeholders(ids) + " AND lease_owner = ?";
  }

  /**
   * Locks those of the given events that the caller still holds: {@code PROCESSING} under its lease when
   * {@code claimed}, else still {@code PENDING}. Parameters: the ids, then the lease owner when claimed.
   */
  default String lockHeld(String table, int ids, boolean claimed) {
    return "SELECT id FROM " + table + " WHERE id IN " + placeholders(ids) + " AND " + fence(claimed) + " FOR UPDATE";
  }

  /**
   * Marks held events dispatched, counting the attempt of unclaimed ones; a dispatched row keeps the lease
   * owner of the claim that dispatched it. Parameters: the ids.
   */
  default String markDispatched(String table, int ids, boolean claimed) {
    return "UPDATE " + table + " SET status = 'DISPATCHED', dispatched_at = " + now()
        + ", lease_until = NULL" + (claimed ? "" : ", attempts = attempts + 1")
        + " WHERE id IN " + placeholders(ids);
  }

  /** Marks claimed events dispatched, fenced by the claim. Parameters: the ids, then the lease owner. */
  default String markDispatchedFenced(String table, int ids) {
    return markDispatched(table, ids, true) + " AND " + fence(true);
  }

  /** Puts held events back untried. Parameters: delay micros, then the ids. */
  default String release(String table, int ids, boolean claimed) {
    return "UPDATE " + table + " SET status = 'PENDING', next_attempt_at = " + plusMicros(now())
        + ", lease_owner = NULL, lease_until = NULL" + (claimed ? ", attempts = attempts - 1" : "")
        + " WHERE id IN " + placeholders(ids);
  }

  /** Extends the leases of held events. Parameters: lease micros, then the ids. */
  default String renew(String table, int ids) {
    return "UPDATE " + table + " SET lease_until = " + plusMicros(now()) + " WHERE id IN " + placeholders(ids);
  }

  // ------------------------------------------------------------------ dispatch, one statement (updateReturning)

  /** Claims due events. Parameters: limit, lease owner, lease micros. Returns the rows. */
  default String claim(String table, boolean ordered) {
    return claim(table, ordered, 0);
  }

  /** Claims due events of topics not paused. Parameters: the paused topics, limit, owner, lease micros. */
  default String claim(String table, boolean ordered, int pausedTopics) {
    throw new UnsupportedOperationException(name() + " claims in a lock-then-update transaction");
  }

  /** Claims heads with their runs. Parameters: head limit, run length - 1, limit, owner, lease micros. */
  default String claimRuns(String table) {
    return claimRuns(table, 0);
  }

  /**
   * Claims heads with their runs, skipping paused topics. Parameters: the paused topics, head limit, the
   * paused topics again, run length - 1, limit, owner, lease micros.
   */
  default String claimRuns(String table, int pausedTopics) {
    throw new UnsupportedOperationException(name() + " claims in a lock-then-update transaction");
  }

  /** Marks dispatched. Parameters: the ids array, then the owner when claimed. Returns the ids marked. */
  default String markDispatchedReturning(String table, boolean claimed) {
    throw new UnsupportedOperationException(name() + " marks in a lock-then-update transaction");
  }

  /** Releases. Parameters: delay micros, ids array, then the owner when claimed. Returns the ids. */
  default String releaseReturning(String table, boolean claimed) {
    throw new UnsupportedOperationException(name() + " marks in a lock-then-update transaction");
  }

  /** Renews leases. Parameters: lease micros, ids array, owner. Returns the ids. */
  default String renewReturning(String table) {
    throw new UnsupportedOperationException(name() + " marks in a lock-then-update transaction");
  }

  // ------------------------------------------------------------------ single-row marks and reads

  /** Schedules a retry. Parameters: delay micros, error, id, then the lease owner when claimed. */
  default String scheduleRetry(String table, boolean claimed) {
    return "UPDATE " + table + " SET status = 'PENDING', next_attempt_at = " + plusMicros(now())
        + ", last_error = ?, lease_owner = NULL, lease_until = NULL" + (claimed ? "" : ", attempts = attempts + 1")
        + " WHERE id = ? AND " + fence(claimed);
  }

  /** Moves to the DLQ. Parameters: error, id, then the lease owner when claimed. */
  default String markDead(String table, boolean claimed) {
    return "UPDATE " + table + " SET status = 'DLQ', last_error = ?, lease_owner = NULL, lease_until = NULL"
        + (claimed ? "" : ", attempts = attempts + 1") + " WHERE id = ? AND " + fence(claimed);
  }

  /** Parameter: id. */
  default String find(String table) {
    return "SELECT " + COLUMNS + " FROM " + table + " WHERE id = ?";
  }

  default String countByStatus(String table) {
    return "SELECT status, COUNT(*) FROM " + table + " GROUP BY status";
  }

  /** One row: microseconds since the oldest live event was created, or null. */
  default String oldestPendingAgeMicros(String table) {
    return "SELECT " + microsSince("MIN(created_at)") + " FROM " + table
        + " WHERE status IN ('PENDING', 'PROCESSING')";
  }

  /** Shifts every stored time back; for tests that need time to pass. Parameters: micros, five times. */
  default String shiftTimes(String table) {
    return "UPDATE " + table + " SET created_at = " + minusMicros("created_at")
        + ", occurred_at = " + minusMicros("occurred_at")
        + ", next_attempt_at = " + minusMicros("next_attempt_at")
        + ", lease_until = " + minusMicros("lease_until")
        + ", dispatched_at = " + minusMicros("dispatched_at");
  }

  /**
   * One row: microseconds since the oldest open transaction of this database (other than the caller's)
   * began, of those that hold back the cleanup of deleted and updated rows, or SQL NULL when none does;
   * {@code null} when the database cannot tell.
   */
  default String oldestTransactionMicros() {
    return null;
  }

  // ------------------------------------------------------------------ operations: retention and dead letters

  /** Binds an instant to a parameter compared with the outbox's time columns. */
  default void setInstant(PreparedStatement ps, int index, Instant instant) throws SQLException {
    ps.setObject(index, instant.atOffset(ZoneOffset.UTC));
  }

  /** The UTC ISO-8601 text of {@code ts} with microseconds, e.g. {@code 2026-09-29T08:00:00.123456Z}. */
  default String timestampText(String ts) {
    return "CAST(" + ts + " AS VARCHAR(64))";
  }

  /**
   * Deletes up to a bound number of rows matching {@code where}, first by {@code order} (the leading column
   * of an index, so that the statement stops at the limit), in one statement. {@code key} lists the
   * primary-key columns. Parameters: those of {@code where}, then the limit. The portable form needs a
   * database that evaluates the key subquery once per statement.
   */
  default String deleteFirst(String table, String key, String where, String order) {
    return "DELETE FROM " + table + " WHERE (" + key + ") IN (SELECT " + key + " FROM " + table
        + " WHERE " + where + " ORDER BY " + order + " LIMIT ?)";
  }

  /** Deletes a batch of dispatched events older than a retention. Parameters: retention micros, limit. */
  default String purgeDispatched(String table) {
    // DISPATCHED is terminal: nothing changes these rows between the subquery and the delete
    return deleteFirst(table, "id", "status = 'DISPATCHED' AND dispatched_at < " + minusMicros(now()),
        retentionOrder());
  }

  /**
   * Dead letters matching {@code filter} (conditions on alias {@code o}, each starting with {@code AND}),
   * oldest first. Parameters: the filter's, then the limit.
   */
  default String selectDeadLetters(String table, String filter) {
    return "SELECT " + COLUMNS + " FROM " + table + " o WHERE o.status = 'DLQ'" + filter
        + " ORDER BY o.created_at, o.id LIMIT ?";
  }

  /**
   * The ids and {@code created_at} of the next dead letters matching {@code filter}, oldest first, after a
   * {@code (created_at, id)} cursor when {@code afterCursor}. Parameters: the filter's, then the cursor's
   * created_at and id, then the limit.
   */
  default String deadLetterPage(String table, String filter, boolean afterCursor) {
    return "SELECT o.id, o.created_at FROM " + table + " o WHERE o.status = 'DLQ'" + filter
        + (afterCursor ? " AND (o.created_at, o.id) > (?, ?)" : "") + " ORDER BY o.created_at, o.id LIMIT ?";
  }

  /**
   * Puts those of the given events still in the {@code DLQ} back to {@code PENDING}, due now, with no
   * attempts and no lease, and records the redrive in {@code last_error}. Parameters: the ids.
   */
  default String redrive(String table, int ids) {
    return "UPDATE " + table + " SET status = 'PENDING', attempts = 0, next_attempt_at = " + now()
        + ", lease_owner = NULL, lease_until = NULL, last_error = CONCAT('redriven at ', " + timestampText(now())
        + ", ' after: ', COALESCE(last_error, ''))"
        + " WHERE id IN " + placeholders(ids) + " AND status = 'DLQ'";
  }

  /** Deletes those of the given events still in the {@code DLQ}. Parameters: the ids. */
  default String deleteDeadLetters(String table, int ids) {
    return "DELETE FROM " + table + " WHERE id IN " + placeholders(ids) + " AND status = 'DLQ'";
  }

  // ------------------------------------------------------------------ consumer inbox

  /** Classpath location of the inbox DDL for the default table name {@code outbox_inbox}. */
  default String inboxSchemaResource() {
    throw new UnsupportedOperationException(name() + " has no inbox DDL: override Dialect.inboxSchemaResource()");
  }

  /**
   * Records a processed event, {@code processed_at} from the database clock. Parameters: consumer, event
   * id. The portable form is a plain insert: a duplicate fails with a unique-key violation that the
   * database rolls back alone, leaving the caller's transaction usable (see {@link #inboxRecorded}).
   */
  default String inboxInsert(String table) {
    return "INSERT INTO " + table + " (consumer, event_id, processed_at) VALUES (?, ?, " + now() + ")";
  }

  /**
   * Executes the prepared {@link #inboxInsert}: {@code true} when it recorded the event, {@code false} when
   * the event was already recorded (or is being recorded by a transaction that then commits); anything
   * else is thrown. Must neither commit nor roll back.
   */
  default boolean inboxRecorded(PreparedStatement insert) throws SQLException {
    try {
      return insert.executeUpdate() == 1;
    } catch (SQLException e) {
      if (isDuplicateKey(e)) {
        return false; // only the failed statement was rolled back
      }
      throw e;
    }
  }

  /** Deletes a batch of inbox records older than a retention. Parameters: retention micros, limit. */
  default String purgeInbox(String table) {
    return deleteFirst(table, "consumer, event_id", "processed_at < " + minusMicros(now()), "processed_at");
  }

  // ------------------------------------------------------------------ consumer ordering guard

  /**
   * Creates, at last sequence 0, the guard row of a consumer and aggregate if it is missing, safe against a
   * concurrent creation (it waits for the other transaction, then does nothing). Parameters: consumer,
   * aggregate_type, aggregate_id.
   */
  default String guardEnsure(String guardTable) {
    throw new UnsupportedOperationException(name() + " has no ordering guard: override Dialect.guardEnsure()");
  }

  /** Locks and reads the guard row's last sequence. Parameters: consumer, aggregate_type, aggregate_id. */
  default String guardLock(String guardTable) {
    return "SELECT last_sequence FROM " + guardTable
        + " WHERE consumer = ? AND aggregate_type = ? AND aggregate_id = ? FOR UPDATE";
  }

  /** Sets the guard row's last sequence. Parameters: sequence, consumer, aggregate_type, aggregate_id. */
  default String guardAdvance(String guardTable) {
    return "UPDATE " + guardTable + " SET last_sequence = ?, updated_at = " + now()
        + " WHERE consumer = ? AND aggregate_type = ? AND aggregate_id = ?";
  }

  /** The columns every read returns, in this order. */
  String COLUMNS = "id, aggregate_type, aggregate_id, topic, payload, headers, priority, status, attempts,"
      + " next_attempt_at, lease_owner, lease_until, created_at, dispatched_at, last_error,"
      + " sequence, schema_version, occurred_at, trace_parent";

  /** The columns an append writes, in this order. */
  String INSERT_COLUMNS = "id, aggregate_type, aggregate_id, topic, payload, headers, priority, created_at,"
      + " next_attempt_at, sequence, schema_version, occurred_at, trace_parent";

  static String aliased(String prefix) {
    return prefix + COLUMNS.replace(", ", ", " + prefix);
  }

  static String fence(boolean claimed) {
    return claimed ? "status = 'PROCESSING' AND lease_owner = ?" : "status = 'PENDING'";
  }

  static String placeholders(int n) {
    return "(" + String.join(", ", Collections.nCopies(n, "?")) + ")";
  }
}
