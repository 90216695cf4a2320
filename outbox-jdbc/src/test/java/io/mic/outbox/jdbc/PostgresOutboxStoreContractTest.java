package io.mic.outbox.jdbc;

class PostgresOutboxStoreContractTest extends JdbcContractTest {
  @Override
  protected TestDatabase database() {
    return TestDatabase.POSTGRES;
  }
}
