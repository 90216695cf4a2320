package io.mic.outbox.test;

import static java.util.Objects.requireNonNullElse;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxStoreException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Statement;
import java.util.Locale;
import java.util.UUID;
import java.util.function.Supplier;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.JdbcDatabaseContainer;
import org.testcontainers.mariadb.MariaDBContainer;
import org.testcontainers.postgresql.PostgreSQLContainer;

/**
 * A database for tests, found the way MIC Outbox finds its own, in this order:
 * <ol>
 *   <li>{@code <PREFIX>_URL} (with {@code <PREFIX>_USER} and {@code <PREFIX>_PASSWORD}) when set, e.g.
 *       {@code MIC_TEST_POSTGRES_URL=jdbc:postgresql://127.0.0.1:5432/test};</li>
 *   <li>a Testcontainers container when Docker is available ({@code postgres:15-alpine},
 *       {@code mariadb:10.11}), stopped when the JVM exits;</li>
 *   <li>the local server ({@code jdbc:postgresql://127.0.0.1:5432/test} user {@code postgres};
 *       {@code jdbc:mariadb://127.0.0.1:3306/test} user {@code root}).</li>
 * </ol>
 * When the chosen database does not answer, the test is skipped, except under {@code CI=true}, where it
 * fails: a CI run must never pass by skipping. The database is resolved once per JVM and prefix.
 *
 * <pre>{@code
 * OutboxTestDatabase db = OutboxTestDatabase.postgres();   // MIC_TEST_POSTGRES_URL, Docker, or local
 * JdbcOutboxStore store = db.newStore();                   // a fresh, uniquely named outbox table
 * try (Connection c = db.dataSource().getConnection()) { store.append(c, event); }
 * db.dropStore(store);                                     // in @AfterEach
 * }</pre>
 *
 * <p>Add the JDBC driver of the database (e.g. {@code org.postgresql:postgresql}) to the test classpath.
 */
public final class OutboxTestDatabase {
  private static final Pattern TABLE_PREFIX = Pattern.compile("[a-z][a-z0-9_]{0,39}");
  /** The environment prefix of {@link #postgres()}. */
  public static final String POSTGRES_ENV = "MIC_TEST_POSTGRES";
  /** The environment prefix of {@link #mariadb()}. */
  public static final String MARIADB_ENV = "MIC_TEST_MARIADB";

  private static final Pattern ENV_PREFIX = Pattern.compile("[A-Z][A-Z0-9_]*");
  private static final java.util.Map<String, OutboxTestDatabase> RESOLVED = new java.util.HashMap<>();

  private final String label;
  private final String url;
  private final String user;
  private final String password;
  private final String source;
  private HikariDataSource dataSource;

  private OutboxTestDatabase(String label, String url, String user, String password, String source) {
    this.label = label;
    this.url = url;
    this.user = user;
    this.password = password;
    this.source = source;
  }

  /** PostgreSQL, from {@value #POSTGRES_ENV}{@code _URL}, Testcontainers or the local server. */
  public static OutboxTestDatabase postgres() {
    return postgres(POSTGRES_ENV);
  }

  /** PostgreSQL, from {@code <envPrefix>_URL}, Testcontainers or the local server. */
  public static OutboxTestDatabase postgres(String envPrefix) {
    return resolve("PostgreSQL", envPrefix, "jdbc:postgresql://127.0.0.1:5432/test", "postgres",
        () -> new PostgreSQLContainer("postgres:15-alpine"));
  }

  /** MariaDB, from {@value #MARIADB_ENV}{@code _URL}, Testcontainers or the local server. */
  public static OutboxTestDatabase mariadb() {
    return mariadb(MARIADB_ENV);
  }

  /** MariaDB, from {@code <envPrefix>_URL}, Testcontainers or the local server. */
  public static OutboxTestDatabase mariadb(String envPrefix) {
    return resolve("MariaDB", envPrefix, "jdbc:mariadb://127.0.0.1:3306/test", "root",
        () -> new MariaDBContainer("mariadb:10.11"));
  }

  /** The JDBC URL in use. */
  public String url() {
    return url;
  }

  /** The user the tests connect as. */
  public String user() {
    return user;
  }

  /** The password of {@link #user()}; empty for a local server with trust authentication. */
  public String password() {
    return password;
  }

  /** Where the URL came from: the environment variable's name, {@code Testcontainers} or {@code local server}. */
  public String source() {
    return source;
  }

  /** One shared pool (up to 10 connections) for the whole JVM; closed when the JVM exits. */
  public synchronized DataSource dataSource() {
    if (dataSource == null) {
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(url);
      config.setUsername(user);
      config.setPassword(password);
      config.setMaximumPoolSize(10);
      config.setPoolName("mic-outbox-test-" + label.toLowerCase(Locale.ROOT));
      dataSource = new HikariDataSource(config);
      Runtime.getRuntime().addShutdownHook(new Thread(dataSource::close));
    }
    return dataSource;
  }

  /** A store on a new outbox table named by {@link #newTable()}, its schema created. */
  public JdbcOutboxStore newStore() {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource()).table(newTable()).build();
    store.createSchema();
    return store;
  }

  /**
   * A unique outbox table name ({@code outbox_t…}) for a store built elsewhere (by a Spring context, say);
   * {@link #dropStore(String)} accepts it.
   */
  public String newTable() {
    return newTable("outbox_t");
  }

  /**
   * A unique table name of {@code prefix} and 12 hex digits, for a shared database whose naming rules want
   * the team's prefix ({@code newTable("billing_test_")}); {@link #dropStore(String)} accepts it.
   *
   * @throws IllegalArgumentException if {@code prefix} is not lower-case letters, digits and {@code _},
   *     starting with a letter, at most 40 characters
   */
  public String newTable(String prefix) {
    if (prefix == null || !TABLE_PREFIX.matcher(prefix).matches()) {
      throw new IllegalArgumentException("prefix must be lower-case letters, digits and '_', starting with a"
          + " letter, at most 40 characters, e.g. 'billing_test_'; was " + prefix);
    }
    return prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }

  /**
   * Drops the table of a store made by {@link #newStore()} and the tables beside it (locks, sequences, control,
   * the claim journal).
   */
  public void dropStore(JdbcOutboxStore store) {
    dropStore(store.table());
  }

  /** Drops an outbox table named by {@link #newTable()} or {@link #newTable(String)} and the tables beside it. */
  public void dropStore(String table) {
    if (table == null || !TABLE_PREFIX.matcher(table.substring(0, Math.max(0, table.length() - 12))).matches()
        || !table.substring(table.length() - 12).matches("[0-9a-f]{12}")) {
      throw new IllegalArgumentException("table " + table + " was not named by newTable(): drop it yourself");
    }
    try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
      for (String beside : new String[] {"_locks", "_sequences", "_control", "_claims"}) {
        s.execute("DROP TABLE IF EXISTS " + table + beside);
      }
    } catch (SQLException e) {
      throw new IllegalStateException("cannot drop test table " + table + ": " + e.getMessage(), e);
    }
  }

  /** Runs one SQL statement of the test's own (a table of its domain, say) on a connection of its own. */
  public void execute(String sql) {
    try (Connection c = dataSource().getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot run test SQL: " + e.getMessage(), e);
    }
  }

  @Override
  public String toString() {
    return label + " at " + OutboxStoreException.redact(url) + " (" + source + ")"; // a CI secret stays one
  }

  private static synchronized OutboxTestDatabase resolve(String label, String envPrefix, String localUrl,
      String localUser, Supplier<JdbcDatabaseContainer<?>> container) {
    if (envPrefix == null || !ENV_PREFIX.matcher(envPrefix).matches()) {
      throw new IllegalArgumentException("envPrefix must be upper-case letters, digits and '_', e.g. "
          + POSTGRES_ENV + ", was " + envPrefix);
    }
    String key = label + "/" + envPrefix;
    OutboxTestDatabase db = RESOLVED.get(key);
    if (db == null) {
      db = check(find(label, envPrefix, localUrl, localUser, container), envPrefix);
      RESOLVED.put(key, db);
    }
    return db;
  }

  private static OutboxTestDatabase find(String label, String envPrefix, String localUrl, String localUser,
      Supplier<JdbcDatabaseContainer<?>> container) {
    String url = System.getenv(envPrefix + "_URL");
    if (url != null && !url.isBlank()) {
      return new OutboxTestDatabase(label, url, requireNonNullElse(System.getenv(envPrefix + "_USER"), localUser),
          requireNonNullElse(System.getenv(envPrefix + "_PASSWORD"), ""), envPrefix + "_URL");
    }
    if (dockerAvailable()) {
      JdbcDatabaseContainer<?> c = container.get();
      c.start();
      Runtime.getRuntime().addShutdownHook(new Thread(c::stop));
      return new OutboxTestDatabase(label, c.getJdbcUrl(), c.getUsername(), c.getPassword(), "Testcontainers");
    }
    return new OutboxTestDatabase(label, localUrl, localUser, "", "local server");
  }

  private static boolean dockerAvailable() {
    // asked first, so that the usual fallback to a local server does not have Testcontainers log an ERROR
    // about a Docker environment it could not find
    if (System.getenv("DOCKER_HOST") == null && !Files.exists(Path.of("/var/run/docker.sock"))
        && !Files.exists(Path.of(System.getProperty("user.home"), ".testcontainers.properties"))) {
      return false;
    }
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  private static OutboxTestDatabase check(OutboxTestDatabase db, String envPrefix) {
    try (Connection c = DriverManager.getConnection(db.url, db.user, db.password)) {
      return db;
    } catch (SQLException e) {
      String message = db.label + " for tests is unreachable at " + OutboxStoreException.redact(db.url) + " ("
          + db.source + "): " + OutboxStoreException.describe(e) + ". Set " + envPrefix + "_URL (and _USER, _PASSWORD), start Docker, or start a"
          + " local server";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new IllegalStateException(message, e);
      }
      Assumptions.abort(message);
      return null;
    }
  }
}
