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

  @Override protected String clockSql() { return "SELECT clock_timestamp()"; }

  @Override protected String lockWaitsSql() {
    return "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'";
  }
}
