package io.mic.outbox.jdbc;

/** Retention and dead letters on PostgreSQL, with a session time zone far from UTC. */
class PostgresOutboxOperationsTest extends OutboxOperationsTest {
  @Override protected TestDatabase database() { return TestDatabase.POSTGRES; }

  @Override protected String clockSql() { return "SELECT clock_timestamp()"; }

  @Override protected String connectionInitSql() { return "SET TIME ZONE 'Asia/Kathmandu'"; }
}
