package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract on PostgreSQL with the default options, on tables that createSchema() upgraded from schema
 * version 1 (before parked events): each test's table is first created with that DDL, then createSchema()
 * replaces its claim index and adds the parked events' index. The other PostgreSQL runs start from new tables.
 */
class PostgresOutboxStoreContractTest extends JdbcContractTest {
  @Override
  protected TestDatabase database() {
    return TestDatabase.POSTGRES;
  }

  @Override
  protected void beforeCreateSchema(String table) {
    OldSchemas.BEFORE_PARKING.create(dataSource, table);
    assertThat(OldSchemas.indexes(dataSource, table)).contains(table + "_claim_idx")
        .doesNotContain(table + "_parked_idx");
  }
}
