package io.mic.outbox.jdbc;

class H2JdbcInboxTest extends JdbcInboxTest {
  @Override protected TestDatabase database() { return TestDatabase.H2; }

  @Override protected String clockSql() { return "SELECT CURRENT_TIMESTAMP"; }
}
