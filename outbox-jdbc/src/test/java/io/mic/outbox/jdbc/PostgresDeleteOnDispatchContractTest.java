package io.mic.outbox.jdbc;

/** The contract on PostgreSQL with rows deleted at their mark ({@code deleteOnDispatch(true)}). */
class PostgresDeleteOnDispatchContractTest extends JdbcContractTest {
  @Override
  protected TestDatabase database() {
    return TestDatabase.POSTGRES;
  }

  @Override
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return builder.deleteOnDispatch(true);
  }

  @Override
  protected boolean keepsDispatchedRows() {
    return false;
  }
}
