package io.mic.outbox.jdbc;

/** Retention and dead letters on MariaDB, with a session time zone far from UTC: times must stay UTC. */
class MariaDbOutboxOperationsTest extends OutboxOperationsTest {
  @Override protected TestDatabase database() { return TestDatabase.MARIADB; }

  @Override protected String clockSql() { return "SELECT UTC_TIMESTAMP(6)"; }

  @Override protected String connectionInitSql() { return "SET time_zone = '+05:45'"; }
}
