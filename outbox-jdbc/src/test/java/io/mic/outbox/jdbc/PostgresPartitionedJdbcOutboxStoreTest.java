package io.mic.outbox.jdbc;

import java.time.Duration;

/** The store's own suite (appends, sequences in commit order, ordered dispatch) on partitioned tables. */
class PostgresPartitionedJdbcOutboxStoreTest extends PostgresJdbcOutboxStoreTest {
  @Override
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return builder.partitionInterval(Duration.ofHours(1));
  }
}
