package io.mic.outbox.jdbc;

import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The DDL of one outbox table and the tables beside it, and the upgrades of tables created by earlier
 * versions: the event envelope's columns, and PostgreSQL's lean indexes ({@link Catalog}).
 */
final class OutboxSchema {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxSchema.class);
  /** The columns of the event envelope; a table without them is upgraded by createSchema(). */
  private static final List<String> ENVELOPE_COLUMNS = List.of("sequence", "schema_version", "occurred_at",
      "trace_parent");
  private static final String DEFAULT_TABLE = JdbcOutboxStore.DEFAULT_TABLE;

  private final TableAccess access;
  /** The partitions of a partitioned table; null for a plain one. */
  private final PostgresPartitions partitions;

  OutboxSchema(TableAccess access, PostgresPartitions partitions) {
    this.access = access;
    this.partitions = partitions;
  }

  /** See {@link JdbcOutboxStore#createSchema()}; {@code journal}: the claim journal of held claims too. */
  void create(boolean journal) {
    Dialect dialect = access.dialect;
    SchemaVersion version = new SchemaVersion(access);
    version.requireKnownNow(); // a schema newer than this library is left as it is
    String kind = partitions == null ? null : partitions.kind();
    boolean created = access.createSchema(partitions != null && !"r".equals(kind) ? PostgresPartitions.RESOURCE
        : dialect.schemaResource(), DEFAULT_TABLE);
    boolean upgraded = access.upgrade(envelopeUpgrade(), DEFAULT_TABLE, ENVELOPE_COLUMNS);
    boolean lean = access.upgradeIndexes(DEFAULT_TABLE);
    boolean parking = access.upgradeParking(DEFAULT_TABLE);
    if ("r".equals(kind)) {
      partitions.convert(); // a plain table of an earlier version becomes the first partition
    }
    if (partitions != null) {
      partitions.ensure();
    }
    createControlTable();
    version.record();
    if (journal) {
      access.createSchema(ClaimJournal.JOURNAL_RESOURCE, DEFAULT_TABLE);
    }
    LOG.info("outbox table {} {} ({})", access.name, upgraded ? "upgraded to the event envelope"
        : lean ? "upgraded to the lean indexes" : parking ? "upgraded to the claim index without parked events"
        : created ? "ready" : "found", dialect.name());
  }

  String ddl() {
    return access.ddl(partitions != null ? PostgresPartitions.RESOURCE : access.dialect.schemaResource(),
        DEFAULT_TABLE);
  }

  String envelopeUpgradeDdl() {
    return access.ddl(envelopeUpgrade(), DEFAULT_TABLE);
  }

  /** The lean indexes, then the claim index without parked events; both safe to run again. */
  String indexesUpgradeDdl() {
    Catalog catalog = Catalog.of(access.dialect);
    String lean = catalog.upgradeIndexesResource();
    String parking = catalog.upgradeParkingResource();
    return (lean == null ? "" : access.ddl(lean, DEFAULT_TABLE)) + (parking == null ? "" : access.ddl(parking,
        DEFAULT_TABLE));
  }

  private String envelopeUpgrade() {
    return access.dialect.schemaResource().replace(".sql", "-upgrade-envelope.sql");
  }

  private void createControlTable() {
    try {
      new OutboxControl(access).createSchema();
    } catch (OutboxStoreException e) {
      // a runtime role without DDL rights must still start: pauses are then not honoured, and said so
      LOG.warn("outbox table {}: cannot create the control table {}, so cluster-wide pauses cannot be honoured"
          + " by this role; run createSchema() once as the schema's owner and grant SELECT on it: {}", access.name,
          access.name.derivedName("control"), e.getMessage());
    }
  }
}
