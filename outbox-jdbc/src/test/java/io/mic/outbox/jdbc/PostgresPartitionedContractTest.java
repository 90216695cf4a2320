package io.mic.outbox.jdbc;

import java.time.Duration;
import java.util.TimeZone;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The contract on PostgreSQL with the table partitioned by range of {@code created_at}, in odd time zones: a
 * database session time zone of UTC+13:45 and a JVM default of UTC-03:30, so any conversion through local time
 * shows up as a wrong order, a wrong delay or a row in the wrong partition.
 */
class PostgresPartitionedContractTest extends JdbcContractTest {
  private TimeZone jvmZone;

  @Override
  protected TestDatabase database() {
    return TestDatabase.POSTGRES;
  }

  @Override
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return builder.partitionInterval(Duration.ofHours(1));
  }

  @Override
  protected String connectionInitSql() {
    return "SET TIME ZONE 'Pacific/Chatham'";
  }

  @BeforeAll
  void oddJvmZone() {
    jvmZone = TimeZone.getDefault();
    TimeZone.setDefault(TimeZone.getTimeZone("America/St_Johns"));
  }

  @AfterAll
  void restoreJvmZone() {
    TimeZone.setDefault(jvmZone);
  }
}
