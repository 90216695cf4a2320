package io.mic.outbox.jdbc;

/**
 * The outbox's tables carry a schema version newer than {@link JdbcOutboxStore#SCHEMA_VERSION}: a newer MIC
 * Outbox upgraded them. The store then claims and reads nothing for dispatch, and {@code createSchema()} changes
 * nothing, until it runs with a version that knows the schema (docs/operations.md, "The schema version").
 */
public final class SchemaTooNewException extends OutboxStoreException {
  private static final long serialVersionUID = 1L;
  private final int version;

  SchemaTooNewException(String table, int version) {
    super("outbox table " + table + " has schema version " + version + ", newer than version "
        + JdbcOutboxStore.SCHEMA_VERSION + " that this MIC Outbox knows: a newer MIC Outbox upgraded it, so this one"
        + " dispatches nothing from it. Run the application and mic-outbox with the version that upgraded the tables"
        + " (or a later one)", null);
    this.version = version;
  }

  /** The version recorded in the tables. */
  public int version() {
    return version;
  }
}
