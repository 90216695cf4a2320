package io.mic.outbox.jdbc;

/** The inbox on PostgreSQL, with a session time zone far from UTC. */
class PostgresJdbcInboxTest extends JdbcInboxTest {
  @Override protected TestDatabase database() { return TestDatabase.POSTGRES; }

  @Override protected String clockSql() { return "SELECT clock_timestamp()"; }

  @Override protected String connectionInitSql() { return "SET TIME ZONE 'Asia/Kathmandu'"; }
}
