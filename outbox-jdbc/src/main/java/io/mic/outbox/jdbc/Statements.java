package io.mic.outbox.jdbc;

import java.util.function.Function;

/**
 * The operations of one outbox table, each an object that owns its SQL, its values and its row reading,
 * chosen once per database: where the SQL truly differs there is one class per database
 * ({@link PostgresClaim}, {@link LockingClaim}, {@link PostgresMarks}, {@link LockingMarks},
 * {@link PostgresAppend}, {@link MariaDbAppend}, {@link H2Append}); the rest is shared, composed of
 * {@link Sql} fragments that carry their own values ({@link DispatchSql} for the reads of dispatchable
 * events). The catalog queries of each database are in {@link Catalog}.
 */
record Statements(TableAccess access, FetchStatement fetch, ClaimStatement claim, MarkStatements marks, AppendStatements append,
    EventQueries queries, ControlStatements control, HeldClaims held, PostgresParking parking) {

  /**
   * {@code read} of {@code request} honouring the control table ({@link ControlStatements#honouring}, which
   * refuses a table of a newer schema version before anything is parked), on PostgreSQL after parking and
   * unparking the waiting events of held aggregates when a round is due ({@link PostgresParking}).
   */
  <T> T read(ReadRequest request, Function<ReadRequest, T> read) {
    return control.honouring(request, r -> {
      if (parking != null) {
        parking.reconcile(r.hold());
      }
      return read.apply(r);
    });
  }

  /** The databases whose statements ship; a dialect of one's own extends the class of one of them. */
  enum Database { POSTGRESQL, MARIADB, H2 }

  static Database database(Dialect dialect) {
    if (dialect instanceof PostgresDialect) {
      return Database.POSTGRESQL;
    }
    if (dialect instanceof MariaDbDialect) {
      return Database.MARIADB;
    }
    if (dialect instanceof H2Dialect) {
      return Database.H2;
    }
    throw new UnsupportedDatabaseException("dialect " + dialect.name() + " (" + dialect.getClass().getName()
        + ") is not supported: a dialect of your own must extend PostgresDialect, MariaDbDialect or H2Dialect,"
        + " whose statements it then uses");
  }

  /**
   * {@code deleteOnDispatch}: {@link JdbcOutboxStore.Builder#deleteOnDispatch}; {@code transactionalClaims}:
   * {@link JdbcOutboxStore.Builder#transactionalClaims}, PostgreSQL only (the caller refuses it elsewhere), and
   * {@link #held} is {@code null} without it.
   */
  static Statements of(TableAccess access, boolean deleteOnDispatch, boolean transactionalClaims) {
    Dialect dialect = access.dialect;
    Tables tables = Tables.of(access.name, dialect);
    Database database = database(dialect);
    DispatchSql sql = new DispatchSql(dialect, tables, database);
    FetchStatement fetch = new FetchStatement(access, sql);
    EventQueries queries = new EventQueries(access);
    ControlStatements control = new ControlStatements(access);
    return switch (database) {
      case POSTGRESQL -> {
        PostgresClaim claim = new PostgresClaim(access, sql);
        PostgresMarks marks = new PostgresMarks(access, deleteOnDispatch);
        yield new Statements(access, fetch, claim, marks, new PostgresAppend(dialect, tables), queries, control,
            transactionalClaims ? new HeldClaims(access, claim, deleteOnDispatch) : null,
            new PostgresParking(access));
      }
      case MARIADB -> new Statements(access, fetch, new LockingClaim(access, sql),
          new LockingMarks(access, deleteOnDispatch), new MariaDbAppend(dialect, tables), queries, control, null, null);
      case H2 -> new Statements(access, fetch, new LockingClaim(access, sql),
          new LockingMarks(access, deleteOnDispatch), new H2Append(dialect, tables), queries, control, null, null);
    };
  }
}
