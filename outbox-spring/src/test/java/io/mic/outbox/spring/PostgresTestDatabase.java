package io.mic.outbox.spring;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.PostgreSQLContainer;

/**
 * The PostgreSQL these tests run against, found like the project's other tests: {@code MIC_TEST_POSTGRES_URL}
 * (with {@code _USER} / {@code _PASSWORD}); a Testcontainers container when Docker is available; the local
 * server. When none answers the tests are skipped, except under {@code CI=true}, where that is a failure.
 */
final class PostgresTestDatabase {
  record Target(String url, String user, String password) {}

  private static Target target;

  private PostgresTestDatabase() {}

  static synchronized Target target() {
    if (target == null) {
      target = resolve();
    }
    return target;
  }

  /** The Spring properties that point {@code spring.datasource} at the test database. */
  static String[] datasourceProperties() {
    Target t = target();
    return new String[] {"spring.datasource.url=" + t.url(), "spring.datasource.username=" + t.user(),
        "spring.datasource.password=" + t.password(), "spring.datasource.hikari.maximum-pool-size=4"};
  }

  static String uniqueTable() {
    return "outbox_spring_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  static void dropOutbox(String table) {
    execute("DROP TABLE IF EXISTS " + table + ", " + table + "_locks");
  }

  static void execute(String sql) {
    Target t = target();
    try (Connection c = DriverManager.getConnection(t.url(), t.user(), t.password());
        Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot run test SQL: " + sql, e);
    }
  }

  private static Target resolve() {
    String url = System.getenv("MIC_TEST_POSTGRES_URL");
    if (url != null && !url.isBlank()) {
      return check(new Target(url, env("MIC_TEST_POSTGRES_USER", "postgres"),
          env("MIC_TEST_POSTGRES_PASSWORD", "")), "MIC_TEST_POSTGRES_URL");
    }
    if (dockerAvailable()) {
      PostgreSQLContainer<?> c = new PostgreSQLContainer<>("postgres:15-alpine");
      c.start();
      Runtime.getRuntime().addShutdownHook(new Thread(c::stop));
      return check(new Target(c.getJdbcUrl(), c.getUsername(), c.getPassword()), "Testcontainers");
    }
    return check(new Target("jdbc:postgresql://127.0.0.1:5432/test", "postgres", ""), "local server");
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  private static Target check(Target t, String source) {
    try (Connection c = DriverManager.getConnection(t.url(), t.user(), t.password())) {
      return t;
    } catch (SQLException e) {
      String message = "PostgreSQL for tests is unreachable at " + t.url() + " (" + source + "): "
          + e.getMessage() + ". Set MIC_TEST_POSTGRES_URL, or start the local server with: "
          + "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start";
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
