package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract on PostgreSQL with rows deleted at their mark ({@code deleteOnDispatch(true)}), on tables that
 * createSchema() upgraded from the schema before the lean indexes: each test's table is first created with
 * that DDL, then createSchema() replaces its indexes.
 */
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

  @Override
  protected void beforeCreateSchema(String table) {
    OldSchemas.BEFORE_LEAN.create(dataSource, table);
    assertThat(OldSchemas.indexes(dataSource, table)).contains(table + "_aggregate_idx", table + "_dispatched_idx");
  }
}
