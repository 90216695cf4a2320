package io.mic.outbox.jdbc;

import java.util.TimeZone;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * The same contract with a database session time zone of UTC+13:45 and a JVM default of UTC-03:30, so
 * any conversion through local time shows up as a wrong order or a wrong delay.
 */
class PostgresOddTimeZoneContractTest extends PostgresOutboxStoreContractTest {
  private static TimeZone jvmZone;

  @BeforeAll
  static void oddZones() {
    jvmZone = TimeZone.getDefault();
    TimeZone.setDefault(TimeZone.getTimeZone("America/St_Johns"));
    dataSource.close();
    dataSource = PostgresTestDatabase.dataSource(10, "SET TIME ZONE 'Pacific/Chatham'");
  }

  @AfterAll
  static void restoreZone() {
    TimeZone.setDefault(jvmZone);
  }
}
