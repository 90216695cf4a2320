package io.mic.outbox.jdbc;

class H2OutboxStoreContractTest extends JdbcContractTest {
  @Override
  protected TestDatabase database() {
    return TestDatabase.H2;
  }
}
