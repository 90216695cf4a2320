package io.mic.outbox.jdbc;

/** The contract on MariaDB, with a session time zone far from UTC: stored times must stay UTC. */
class MariaDbOutboxStoreContractTest extends JdbcContractTest {
  @Override
  protected TestDatabase database() {
    return TestDatabase.MARIADB;
  }

  @Override
  protected String connectionInitSql() {
    return "SET time_zone = '-09:30'";
  }
}
