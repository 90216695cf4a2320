package io.mic.outbox.jdbc;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.function.Supplier;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.JdbcDatabaseContainer;
import org.testcontainers.mariadb.MariaDBContainer;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * The databases the tests run against. Each server is found in this order: {@code MIC_TEST_<DB>_URL}
 * (with {@code MIC_TEST_<DB>_USER} / {@code _PASSWORD}); a Testcontainers container when Docker is
 * available; the local server. When none answers the tests are skipped, except under {@code CI=true},
 * where that is a failure. H2 runs in process.
 */
enum TestDatabase {
  POSTGRES("PostgreSQL", "MIC_TEST_POSTGRES", "jdbc:postgresql://127.0.0.1:5432/test", "postgres",
      "pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start",
      () -> new PostgreSQLContainer("postgres:15-alpine")),
  MARIADB("MariaDB", "MIC_TEST_MARIADB", "jdbc:mariadb://127.0.0.1:3306/test", "root",
      "start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd",
      () -> new MariaDBContainer("mariadb:10.11")),
  H2("H2", null, "jdbc:h2:mem:mic-outbox-tests;DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000", "sa", null, null);

  record Target(String url, String user, String password, String source) {}

  private final String label;
  private final String envPrefix;
  private final String localUrl;
  private final String localUser;
  private final String startCommand;
  private final Supplier<JdbcDatabaseContainer<?>> container;
  private Target target;

  TestDatabase(String label, String envPrefix, String localUrl, String localUser, String startCommand,
      Supplier<JdbcDatabaseContainer<?>> container) {
    this.label = label;
    this.envPrefix = envPrefix;
    this.localUrl = localUrl;
    this.localUser = localUser;
    this.startCommand = startCommand;
    this.container = container;
  }

  synchronized Target target() {
    if (target == null) {
      target = resolve();
    }
    return target;
  }

  /** A new pool; {@code initSql} runs on every new connection (e.g. to set an odd session time zone). */
  HikariDataSource dataSource(int poolSize, String initSql) {
    return dataSource(poolSize, initSql, true);
  }

  HikariDataSource dataSource(int poolSize, String initSql, boolean autoCommit) {
    return pool(target().url(), poolSize, initSql, autoCommit);
  }

  /** A new pool whose URL carries one more driver parameter, e.g. {@code useServerPrepStmts=true}. */
  HikariDataSource dataSourceWithUrlParameter(String parameter, int poolSize) {
    String url = target().url();
    return pool(url + (url.contains("?") ? "&" : "?") + parameter, poolSize, null, true);
  }

  private HikariDataSource pool(String url, int poolSize, String initSql, boolean autoCommit) {
    Target t = target();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(t.user());
    config.setPassword(t.password());
    config.setMaximumPoolSize(poolSize);
    config.setAutoCommit(autoCommit);
    config.setPoolName(name().toLowerCase() + "-" + UUID.randomUUID().toString().substring(0, 8));
    if (initSql != null) {
      config.setConnectionInitSql(initSql);
    }
    return new HikariDataSource(config);
  }

  static String uniqueName(String prefix) {
    return prefix + "_" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  /**
   * Appends {@code n} events of as many aggregates ({@code order}, {@code o-0} …) in one committed
   * transaction, and returns them in append order.
   */
  static List<OutboxEvent> appendOrders(DataSource ds, JdbcOutboxStore store, int n) throws SQLException {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      events.add(OutboxEvent.builder().aggregate("order", "o-" + i).topic("order.created")
          .payload("{\"n\":" + i + "}").build());
    }
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
      c.setAutoCommit(true);
    }
    return events;
  }

  /** Drops an outbox table and the tables beside it (locks, sequences, control). */
  static void dropOutbox(DataSource ds, String table) {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
      TableName name = TableName.parse("table", table);
      for (String suffix : new String[] {"locks", "sequences", "control", "claims"}) {
        s.execute("DROP TABLE IF EXISTS " + (name.schema() == null ? "" : name.schema() + ".")
            + name.derivedName(suffix));
      }
      if (c.getMetaData().getDatabaseProductName().equals("PostgreSQL")) { // a partitioned table's
        s.execute("DROP FUNCTION IF EXISTS " + (name.schema() == null ? "" : name.schema() + ".")
            + name.derivedName("id_fn") + "()");
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot drop test table " + table, e);
    }
  }

  private Target resolve() {
    if (envPrefix == null) {
      return new Target(localUrl, localUser, "", "in process");
    }
    String url = System.getenv(envPrefix + "_URL");
    if (url != null && !url.isBlank()) {
      return check(new Target(url, env(envPrefix + "_USER", localUser), env(envPrefix + "_PASSWORD", ""),
          envPrefix + "_URL"));
    }
    if (dockerAvailable()) {
      JdbcDatabaseContainer<?> c = container.get();
      c.start();
      Runtime.getRuntime().addShutdownHook(new Thread(c::stop));
      return check(new Target(c.getJdbcUrl(), c.getUsername(), c.getPassword(), "Testcontainers"));
    }
    return check(new Target(localUrl, localUser, "", "local server"));
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  private Target check(Target t) {
    try (Connection c = DriverManager.getConnection(t.url(), t.user(), t.password())) {
      return t;
    } catch (SQLException e) {
      String message = label + " for tests is unreachable at " + t.url() + " (" + t.source() + "): "
          + e.getMessage() + ". Set " + envPrefix + "_URL, or start the local server with: " + startCommand;
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
