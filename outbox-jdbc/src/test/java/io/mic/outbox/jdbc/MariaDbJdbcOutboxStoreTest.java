package io.mic.outbox.jdbc;

class MariaDbJdbcOutboxStoreTest extends JdbcOutboxStoreTest {
  @Override protected TestDatabase database() { return TestDatabase.MARIADB; }

  @Override protected String expectedDialect() { return "MariaDB"; }

  @Override protected String[] createAndDropSchema(String name) {
    return new String[] {"CREATE DATABASE " + name, "DROP DATABASE " + name};
  }

  @Override protected String indexNamesOfSchema() {
    return "SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = ?";
  }

  @Override protected String clockSql() { return "SELECT UTC_TIMESTAMP(6)"; }
}
