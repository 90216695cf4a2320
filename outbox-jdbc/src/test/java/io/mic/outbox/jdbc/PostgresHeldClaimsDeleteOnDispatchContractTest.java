package io.mic.outbox.jdbc;

import java.time.Duration;

/**
 * The contract on PostgreSQL with claims held by transactions and rows deleted at their mark, on a table
 * partitioned by the hour: the held claims' locks, outcomes and claim journal on partitions.
 */
class PostgresHeldClaimsDeleteOnDispatchContractTest extends PostgresHeldClaimsContractTest {
  @Override
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return super.storeOptions(builder).deleteOnDispatch(true).partitionInterval(Duration.ofHours(1));
  }

  @Override
  protected boolean keepsDispatchedRows() {
    return false;
  }
}
