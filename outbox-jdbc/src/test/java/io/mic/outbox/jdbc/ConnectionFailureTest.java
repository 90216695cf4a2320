package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A pool that cannot connect says only "Connection is not available"; the store's message must carry the
 * driver's reason, and never the password. One small subclass per database.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class ConnectionFailureTest {
  private final String password = "pw-" + UUID.randomUUID();

  protected abstract TestDatabase database();

  /** {@code url} with its database replaced by {@code name} and {@code password=…} appended. */
  protected abstract String withDatabase(String url, String name, String password);

  /** {@code url} pointing at port 1 (closed) with {@code password=…} appended. */
  protected abstract String withClosedPort(String url, String password);

  /** The driver's reason for a database that does not exist, as {@link #user()} sees it. */
  protected abstract String unknownDatabaseReason(String name);

  /** The user the pools log in as; {@link #createLogin} gives it {@link #password} where the server checks it. */
  protected String user() {
    return database().target().user();
  }

  /** Statements that let {@link #user()} log in with {@code password}; none where the server trusts the test. */
  protected List<String> createLogin(String password) {
    return List.of();
  }

  protected List<String> dropLogin() {
    return List.of();
  }

  @BeforeAll
  void login() throws SQLException {
    execute(createLogin(password));
  }

  @AfterAll
  void logout() throws SQLException {
    execute(dropLogin());
  }

  private void execute(List<String> statements) throws SQLException {
    try (HikariDataSource admin = database().dataSource(1, null); Connection c = admin.getConnection();
        Statement s = c.createStatement()) {
      for (String sql : statements) {
        s.execute(sql);
      }
    }
  }

  @Test
  void aMissingDatabaseIsNamedWithTheDriversReason() {
    String name = "h_jdbc_missing_" + UUID.randomUUID().toString().substring(0, 8);
    try (HikariDataSource ds = pool(withDatabase(database().target().url(), name, password))) {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).build(); // detects on first use
      assertThatThrownBy(store::countByStatus)
          .isInstanceOf(OutboxStoreException.class)
          .hasMessageStartingWith("cannot connect to detect the database: " + ds.getPoolName()
              + " - Connection is not available")
          .hasMessageContaining(unknownDatabaseReason(name))
          .hasMessageNotContaining(password);
      JdbcInbox inbox = JdbcInbox.builder().dataSource(ds).build(); // detects on first use, too
      assertThatThrownBy(inbox::createSchema)
          .isInstanceOf(OutboxStoreException.class)
          .hasMessageContaining(unknownDatabaseReason(name))
          .hasMessageNotContaining(password);
    }
  }

  @Test
  void aClosedPortIsNamedWithTheDriversReason() {
    try (HikariDataSource ds = pool(withClosedPort(database().target().url(), password))) {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).build();
      assertThatThrownBy(store::countByStatus)
          .isInstanceOf(OutboxStoreException.class)
          .hasMessageStartingWith("cannot connect to detect the database: " + ds.getPoolName()
              + " - Connection is not available")
          .hasMessageContaining("Connection refused")
          .hasMessageNotContaining(password);
    }
  }

  /**
   * An application whose database is down while it starts: building the store does not fail, each use
   * while the database is down fails with the driver's reason, and the first use once it is up detects the
   * dialect and works.
   */
  @Test
  void aDatabaseDownAtBuildIsDetectedOnFirstUseOnceItIsUp() throws SQLException {
    String table = TestDatabase.uniqueName("outbox_late");
    try (HikariDataSource down = pool(withClosedPort(database().target().url(), password));
        HikariDataSource up = database().dataSource(2, null)) {
      SwitchableDataSource ds = new SwitchableDataSource(down);
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(table).build();
      assertThatThrownBy(store::createSchema).isInstanceOf(OutboxStoreException.class)
          .hasMessageContaining("Connection refused");
      assertThatThrownBy(store::countByStatus).isInstanceOf(OutboxStoreException.class)
          .hasMessageContaining("Connection refused"); // tried again, not a remembered failure

      ds.switchTo(up);
      try {
        store.createSchema();
        OutboxEvent event = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
        try (Connection c = ds.getConnection()) {
          c.setAutoCommit(false);
          store.append(c, event);
          c.commit();
        }
        assertThat(store.dialect()).isSameAs(database() == TestDatabase.POSTGRES ? Dialect.POSTGRESQL : Dialect.MARIADB);
        assertThat(store.find(event.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
      } finally {
        TestDatabase.dropOutbox(up, table);
      }
    }
  }

  /**
   * A consumer whose database is down while it starts: building the inbox does not fail, each
   * use while the database is down fails with the driver's reason, and the first use once it is up works.
   */
  @Test
  void anInboxBuiltWhileTheDatabaseIsDownWorksOnceItIsUp() throws SQLException {
    String table = TestDatabase.uniqueName("inbox_late");
    try (HikariDataSource down = pool(withClosedPort(database().target().url(), password));
        HikariDataSource up = database().dataSource(2, null)) {
      SwitchableDataSource ds = new SwitchableDataSource(down);
      JdbcInbox inbox = JdbcInbox.builder().dataSource(ds).table(table).build();
      assertThat(inbox.table()).isEqualTo(table);
      assertThatThrownBy(inbox::createSchema).isInstanceOf(OutboxStoreException.class)
          .hasMessageContaining("Connection refused");
      assertThatThrownBy(() -> inbox.runOnce("billing", "e-1", c -> { })).isInstanceOf(OutboxStoreException.class)
          .hasMessageContaining("Connection refused"); // tried again, not a remembered failure

      ds.switchTo(up);
      try {
        inbox.createSchema();
        assertThat(inbox.runOnce("billing", "e-1", c -> { })).isTrue();
        assertThat(inbox.runOnce("billing", "e-1", c -> { })).as("a duplicate").isFalse();
        assertThat(inbox.dialect()).isSameAs(database() == TestDatabase.POSTGRES ? Dialect.POSTGRESQL : Dialect.MARIADB);
      } finally {
        try (Connection c = up.getConnection(); java.sql.Statement s = c.createStatement()) {
          char q = inbox.dialect().identifierQuote();
          s.execute("DROP TABLE IF EXISTS " + q + table + q);
          s.execute("DROP TABLE IF EXISTS " + q + table + "_sequences" + q);
        }
      }
    }
  }

  private HikariDataSource pool(String url) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(user());
    config.setPassword(password);
    config.setMaximumPoolSize(1);
    config.setConnectionTimeout(250); // HikariCP's least: long enough for the first attempt to fail and leave its reason
    config.setInitializationFailTimeout(-1); // start without a connection, as a pool does when the database is down
    config.setPoolName("unreachable-" + UUID.randomUUID().toString().substring(0, 8));
    return new HikariDataSource(config);
  }
}
