package io.mic.outbox.jdbc;

class PostgresJdbcOutboxStoreTest extends JdbcOutboxStoreTest {
  @Override protected TestDatabase database() { return TestDatabase.POSTGRES; }

  @Override protected String expectedDialect() { return "PostgreSQL"; }

  @Override protected String[] createAndDropSchema(String name) {
    return new String[] {"CREATE SCHEMA " + name, "DROP SCHEMA " + name + " CASCADE"};
  }

  @Override protected String indexNamesOfSchema() {
    return "SELECT indexname FROM pg_indexes WHERE schemaname = ?";
  }

  /**
   * The lean schema: live rows only in the claim and head indexes, DLQ rows only in the DLQ and held indexes,
   * parked events only in the parked index.
   */
  @Override protected java.util.List<String> expectedIndexes() {
    return java.util.List.of("claim_idx", "head_idx", "dlq_idx", "held_idx", "parked_idx");
  }

  @Override protected String expectedAggregateIndex() {
    return "(aggregate_type, aggregate_id, created_at, id)";
  }

  @Override protected String clockSql() { return "SELECT clock_timestamp()"; }

  @Override protected String lockWaitsSql() {
    return "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
  }
}
