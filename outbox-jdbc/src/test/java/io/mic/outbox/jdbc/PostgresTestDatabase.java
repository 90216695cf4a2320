package io.mic.outbox.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.PostgreSQLContainer;

/**
 * Finds the PostgreSQL the tests run against, in this order: {@code MIC_TEST_POSTGRES_URL} (with
 * {@code MIC_TEST_POSTGRES_USER} / {@code MIC_TEST_POSTGRES_PASSWORD}); a Testcontainers container when
 * Docker is available; the local server at 127.0.0.1:5432, database {@code test}. When none answers the
 * tests are skipped, except under {@code CI=true}, where that is a failure.
 */
final class PostgresTestDatabase {
  private static final String LOCAL_URL = "jdbc:postgresql://127.0.0.1:5432/test";
  private static Target target;

  private PostgresTestDatabase() {}

  record Target(String url, String user, String password, String source) {}

  static synchronized Target target() {
    if (target == null) {
      target = resolve();
    }
    return target;
  }

  /** A new pool; {@code initSql} runs on every connection (e.g. to set an odd session time zone). */
  static HikariDataSource dataSource(int poolSize, String initSql) {
    return dataSource(poolSize, initSql, true);
  }

  static HikariDataSource dataSource(int poolSize, String initSql, boolean autoCommit) {
    Target t = target();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(t.url());
    config.setUsername(t.user());
    config.setPassword(t.password());
    config.setMaximumPoolSize(poolSize);
    config.setAutoCommit(autoCommit);
    config.setPoolName("test-" + UUID.randomUUID().toString().substring(0, 8));
    if (initSql != null) {
      config.setConnectionInitSql(initSql);
    }
    return new HikariDataSource(config);
  }

  static String uniqueTable(String prefix) {
    return prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  static void drop(javax.sql.DataSource ds, String table) {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot drop test table " + table, e);
    }
  }

  private static Target resolve() {
    String url = System.getenv("MIC_TEST_POSTGRES_URL");
    if (url != null && !url.isBlank()) {
      return check(new Target(url, env("MIC_TEST_POSTGRES_USER", "postgres"), env("MIC_TEST_POSTGRES_PASSWORD", ""),
          "MIC_TEST_POSTGRES_URL"));
    }
    if (dockerAvailable()) {
      PostgreSQLContainer<?> container = new PostgreSQLContainer<>("postgres:15-alpine");
      container.start();
      Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
      return check(new Target(container.getJdbcUrl(), container.getUsername(), container.getPassword(),
          "Testcontainers"));
    }
    return check(new Target(LOCAL_URL, "postgres", "", "local server"));
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  private static Target check(Target t) {
    try (Connection c = java.sql.DriverManager.getConnection(t.url(), t.user(), t.password())) {
      return t;
    } catch (SQLException e) {
      String message = "PostgreSQL for tests is unreachable at " + t.url() + " (" + t.source() + "): "
          + e.getMessage() + ". Set MIC_TEST_POSTGRES_URL, or start the local server with: pg_ctlcluster"
          + " --skip-systemctl-redirect $(ls /etc/postgresql) main start";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message, e);
      }
      Assumptions.abort(message);
      return null;
    }
  }

  private static String env(String name, String fallback) {
    String v = System.getenv(name);
    return v == null ? fallback : v;
  }
}
