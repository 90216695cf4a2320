package io.mic.outbox.micrometer;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;

/**
 * The PostgreSQL these tests run against: {@code MIC_TEST_POSTGRES_URL} (with {@code MIC_TEST_POSTGRES_USER}
 * and {@code MIC_TEST_POSTGRES_PASSWORD}) or the local server at 127.0.0.1:5432, database {@code test}.
 * When it does not answer the tests are skipped, except under {@code CI=true}, where that is a failure.
 */
final class PostgresTestDatabase {
  private static final String LOCAL_URL = "jdbc:postgresql://127.0.0.1:5432/test";

  private PostgresTestDatabase() {}

  static HikariDataSource dataSource(int poolSize) {
    String url = env("MIC_TEST_POSTGRES_URL", LOCAL_URL);
    String user = env("MIC_TEST_POSTGRES_USER", "postgres");
    String password = env("MIC_TEST_POSTGRES_PASSWORD", "");
    try (Connection c = DriverManager.getConnection(url, user, password)) {
      c.isValid(5);
    } catch (SQLException e) {
      String message = "PostgreSQL for tests is unreachable at " + url + ": " + e.getMessage()
          + " (set MIC_TEST_POSTGRES_URL, or start the local server)";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message, e);
      }
      Assumptions.abort(message);
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(user);
    config.setPassword(password);
    config.setMaximumPoolSize(poolSize);
    config.setPoolName("metrics-test-" + UUID.randomUUID().toString().substring(0, 8));
    return new HikariDataSource(config);
  }

  static String uniqueTable() {
    return "outbox_metrics_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  static void execute(DataSource ds, String sql) {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot run test SQL: " + sql, e);
    }
  }

  private static String env(String name, String fallback) {
    String v = System.getenv(name);
    return v == null || v.isBlank() ? fallback : v;
  }
}
