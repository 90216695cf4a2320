package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;

/**
 * The conditions every read of dispatchable events shares, for one database and one outbox, each a fragment
 * that carries its values: the outbox's alias is {@code o}. The claim index differs per database: MariaDB
 * and MySQL order by a stored {@code live_priority}, whose index holds live rows only; PostgreSQL and H2 by
 * {@code priority}.
 */
final class DispatchSql {
  final Dialect dialect;
  final Tables tables;
  private final Statements.Database database;
  private final String priority;
  /**
   * On PostgreSQL, a top-level condition that is the claim index's own, {@code next_attempt_at < 'infinity'}:
   * with it the planner may use the index, which leaves the parked events out ({@link PostgresParking}); they
   * are never due anyway.
   */
  private final String notParked;

  DispatchSql(Dialect dialect, Tables tables, Statements.Database database) {
    this.dialect = dialect;
    this.tables = tables;
    this.database = database;
    this.priority = database == Statements.Database.MARIADB ? "o.live_priority" : "o.priority";
    this.notParked = database == Statements.Database.POSTGRESQL ? ".next_attempt_at < 'infinity' AND " : null;
  }

  /** The claim and fetch order; it matches the claim index. */
  String dispatchOrder() {
    return priority + " DESC, o.created_at, o.id";
  }

  /** A cheap filter on live rows that lets MariaDB's claim index be used, or nothing. */
  String liveRows() {
    return database == Statements.Database.MARIADB ? "o.live_priority IS NOT NULL AND " : "";
  }

  /** A due {@code PENDING} event. */
  String due() {
    return notParked("o") + "o.status = 'PENDING' AND o.next_attempt_at <= " + dialect.now();
  }

  /** A due {@code PENDING} event, or a {@code PROCESSING} one whose lease expired. */
  String claimable() {
    return claimable("o");
  }

  String claimable(String alias) {
    String now = dialect.now();
    return notParked(alias) + "((" + alias + ".status = 'PENDING' AND " + alias + ".next_attempt_at <= " + now + ")"
        + " OR (" + alias + ".status = 'PROCESSING' AND " + alias + ".lease_until < " + now + "))";
  }

  private String notParked(String alias) {
    return notParked == null ? "" : alias + notParked;
  }

  /**
   * Only the oldest live event of its aggregate: a leased or retry-waiting head hides the rest; when the
   * request holds aggregates, an aggregate with a dead event has none ({@link #notHeld}).
   */
  String isHead(ReadRequest r) {
    return notHeld(r) + " AND NOT EXISTS (SELECT 1 FROM " + tables.outbox() + " p WHERE p.aggregate_type = o.aggregate_type"
        + " AND p.aggregate_id = o.aggregate_id AND p.status IN ('PENDING', 'PROCESSING')"
        + " AND (p.created_at, p.id) < (o.created_at, o.id))";
  }

  /**
   * When the request holds aggregates, no {@code DLQ} event in the aggregate of {@code o}; else nothing. One
   * index probe per head the claim considers (on PostgreSQL of {@code outbox_held_idx}, dead rows only), so the
   * cost does not grow with the size of the DLQ. The held aggregates' waiting events come first in dispatch order;
   * on PostgreSQL they are parked out of the claim index ({@link PostgresParking}), elsewhere a claim steps
   * over those it meets.
   */
  private String notHeld(ReadRequest r) {
    return !r.hold() ? "" : " AND NOT EXISTS (SELECT 1 FROM " + tables.outbox() + " d WHERE d.status = 'DLQ'"
        + " AND d.aggregate_type = o.aggregate_type AND d.aggregate_id = o.aggregate_id)";
  }

  /**
   * Skips the request's paused topics; the control table's pauses are among them once
   * {@link ControlStatements#merge} has read it.
   */
  Sql notPaused(String alias, ReadRequest r) {
    if (r.honourControl()) {
      throw new IllegalStateException("read the control table first: ControlStatements.merge");
    }
    return r.pausedTopics().isEmpty() ? Sql.EMPTY : Sql.of(" AND ").plus(Sql.notIn(alias + ".topic", r.pausedTopics()));
  }

  /**
   * Leaves out the events the reader is still publishing. On PostgreSQL in one parameter
   * ({@link PostgresDialect#ID_BYTES}): the statement's text, and so its plan, does not depend on how many. A
   * subquery, so that PostgreSQL hashes the ids once per execution in every plan: {@code NOT (id = ANY(?))}
   * is hashed only in a plan made for the bound array, and a generic plan (which the server may keep for a
   * prepared statement) compares each row with every id, one after the other. The ids are never null, so
   * {@code NOT IN} means none of them.
   */
  Sql notInFlight(ReadRequest r) {
    if (r.inFlight().isEmpty()) {
      return Sql.EMPTY;
    }
    return database == Statements.Database.POSTGRESQL
        ? Sql.of(" AND uuid_send(o.id) NOT IN (" + PostgresDialect.ID_BYTES + ")", Ids.bytes(r.inFlight()))
        : Sql.of(" AND ").plus(Sql.notIn("o.id", r.inFlight()));
  }

  /**
   * Only what follows the request's position in dispatch order, within its priority, so that the read starts
   * there in the claim index. PostgreSQL starts the index scan at the event; MariaDB and MySQL seek to the
   * priority only and step over the index entries before the event without reading their rows.
   */
  Sql after(ReadRequest r) {
    OutboxEvent after = r.after();
    return after == null ? Sql.EMPTY : Sql.of(" AND " + priority + " = ? AND (o.created_at, o.id) > (?, ?)",
        after.priority(), after.createdAt(), after.id());
  }
}
