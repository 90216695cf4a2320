package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.InvalidConfigurationException;
import org.junit.jupiter.api.Test;

/** {@code notifyOnAppend(true)} exists on PostgreSQL only; elsewhere it is refused, not silently ignored. */
class NotifyOnAppendConfigurationTest {

  @Test
  void isRefusedOnH2() {
    try (HikariDataSource h2 = TestDatabase.H2.dataSource(1, null)) {
      assertThatThrownBy(() -> JdbcOutboxStore.builder().dataSource(h2).notifyOnAppend(true).build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("notifyOnAppend(true) needs PostgreSQL")
          .hasMessageContaining("H2")
          .hasMessageContaining("polling");
    }
  }

  @Test
  void isRefusedOnMariaDb() {
    try (HikariDataSource mariaDb = TestDatabase.MARIADB.dataSource(1, null)) {
      assertThatThrownBy(() -> JdbcOutboxStore.builder().dataSource(mariaDb).notifyOnAppend(true).build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("notifyOnAppend(true) needs PostgreSQL")
          .hasMessageContaining("MariaDB");
    }
  }

  @Test
  void isRefusedForAGivenDialectOtherThanPostgresWithoutTouchingTheDatabase() {
    try (HikariDataSource h2 = TestDatabase.H2.dataSource(1, null)) {
      assertThatThrownBy(() -> JdbcOutboxStore.builder().dataSource(h2).dialect(Dialect.MARIADB)
          .notifyOnAppend(true).build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("MariaDB");
    }
  }
}
