package io.mic.outbox.jdbc;

/** The contract on PostgreSQL with claims held by transactions and rows deleted at their mark. */
class PostgresHeldClaimsDeleteOnDispatchContractTest extends PostgresHeldClaimsContractTest {
  @Override
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return super.storeOptions(builder).deleteOnDispatch(true);
  }

  @Override
  protected boolean keepsDispatchedRows() {
    return false;
  }
}
