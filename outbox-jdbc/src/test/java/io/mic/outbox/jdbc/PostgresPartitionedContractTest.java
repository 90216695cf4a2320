package io.mic.outbox.jdbc;

import java.time.Duration;

/** The contract on PostgreSQL with the table partitioned by range of {@code created_at}. */
class PostgresPartitionedContractTest extends JdbcContractTest {
  @Override
  protected TestDatabase database() {
    return TestDatabase.POSTGRES;
  }

  @Override
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return builder.partitionInterval(Duration.ofHours(1));
  }
}
