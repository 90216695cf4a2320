package io.mic.outbox.jdbc;

class H2JdbcOutboxStoreTest extends JdbcOutboxStoreTest {
  @Override protected TestDatabase database() { return TestDatabase.H2; }

  @Override protected String expectedDialect() { return "H2"; }

  @Override protected String[] createAndDropSchema(String name) {
    return new String[] {"CREATE SCHEMA \"" + name + "\"", "DROP SCHEMA \"" + name + "\" CASCADE"};
  }

  @Override protected String indexNamesOfSchema() {
    return "SELECT INDEX_NAME FROM INFORMATION_SCHEMA.INDEXES WHERE TABLE_SCHEMA = ?";
  }

  @Override protected String clockSql() { return "SELECT CURRENT_TIMESTAMP"; }

  @Override protected String lockWaitsSql() {
    // H2 shows no blocker for a waiting lock: count the other sessions inside a statement
    return "SELECT COUNT(*) FROM INFORMATION_SCHEMA.SESSIONS WHERE SESSION_ID <> SESSION_ID()"
        + " AND EXECUTING_STATEMENT IS NOT NULL";
  }
}
