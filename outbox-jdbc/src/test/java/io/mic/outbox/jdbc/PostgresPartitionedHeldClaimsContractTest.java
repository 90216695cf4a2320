package io.mic.outbox.jdbc;

import java.time.Duration;

/** The contract on a partitioned PostgreSQL table with claims held by transactions. */
class PostgresPartitionedHeldClaimsContractTest extends PostgresHeldClaimsContractTest {
  @Override
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return super.storeOptions(builder).partitionInterval(Duration.ofHours(1));
  }
}
