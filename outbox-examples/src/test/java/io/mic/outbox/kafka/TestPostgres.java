package io.mic.outbox.kafka;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;

/**
 * The PostgreSQL database of the tests: {@code MIC_TEST_POSTGRES_URL} (with {@code _USER} /
 * {@code _PASSWORD}), else the local server. Unreachable: a failure under {@code CI=true}, else skipped.
 */
final class TestPostgres {
  private TestPostgres() {}

  static HikariDataSource dataSource(int poolSize) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(env("MIC_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
    config.setUsername(env("MIC_TEST_POSTGRES_USER", "postgres"));
    config.setPassword(env("MIC_TEST_POSTGRES_PASSWORD", ""));
    config.setMaximumPoolSize(poolSize);
    config.setInitializationFailTimeout(-1);
    HikariDataSource ds = new HikariDataSource(config);
    try (Connection c = ds.getConnection()) {
      return ds;
    } catch (SQLException e) {
      ds.close();
      String message = "PostgreSQL for tests is unreachable at " + config.getJdbcUrl() + ": " + e.getMessage()
          + ". Set MIC_TEST_POSTGRES_URL or start the local server";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message, e);
      }
      Assumptions.abort(message);
      return null;
    }
  }

  static String uniqueTable(String prefix) {
    return prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  static void drop(HikariDataSource ds, String... tables) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      for (String t : tables) {
        for (String beside : new String[] {"", "_locks", "_sequences", "_control"}) {
          s.execute("DROP TABLE IF EXISTS " + t + beside);
        }
      }
    }
  }

  private static String env(String name, String fallback) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? fallback : v;
  }
}
