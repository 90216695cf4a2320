package io.mic.outbox.jdbc;

/** The contract on PostgreSQL with claims held by transactions ({@code transactionalClaims(true)}). */
class PostgresHeldClaimsContractTest extends JdbcContractTest {
  @Override
  protected TestDatabase database() {
    return TestDatabase.POSTGRES;
  }

  @Override
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return builder.transactionalClaims(true);
  }

  @Override
  protected boolean claimsWriteLeases() {
    return false;
  }
}
