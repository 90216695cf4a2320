package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The database ends a session while one of the store's own transactions waits in it (a failover, an
 * administrator): the caller hears the database's reason, not the failure to roll back or reset the
 * connection that died, and the pool's next connection works.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresSessionEndTest {
  private static final String TOPIC = "billing.created";

  private HikariDataSource dataSource;
  private HikariDataSource admin;
  private String table;
  private OutboxControl control;

  @BeforeEach
  void setUp() {
    dataSource = TestDatabase.POSTGRES.dataSource(1, null);
    admin = TestDatabase.POSTGRES.dataSource(2, null);
    table = TestDatabase.uniqueName("outbox_end");
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    control = OutboxControl.builder().store(store).build();
    control.createSchema();
  }

  @AfterEach
  void tearDown() {
    if (admin != null) {
      TestDatabase.dropOutbox(admin, table); // and the tables beside it: _sequences, _control
      admin.close();
    }
    if (dataSource != null) {
      dataSource.close();
    }
  }

  @Test
  void aTransactionWhoseSessionEndsReportsTheDatabasesReason() throws Exception {
    control.pause(TOPIC, "incident 42");
    try (Connection locker = admin.getConnection()) {
      locker.setAutoCommit(false);
      try (Statement s = locker.createStatement()) {
        s.execute("SELECT * FROM " + table + "_control WHERE topic = '" + TOPIC + "' FOR UPDATE");
      }
      CompletableFuture<Boolean> resume = CompletableFuture.supplyAsync(() -> control.resume(TOPIC));
      int pid = awaitBlockedBackend();
      try (Statement s = locker.createStatement()) {
        s.execute("SELECT pg_terminate_backend(" + pid + ")");
      }
      Throwable failure = null;
      try {
        resume.get(30, TimeUnit.SECONDS);
      } catch (ExecutionException e) {
        failure = e.getCause();
      }
      assertThat(failure).as("the resume whose session ended").isInstanceOf(OutboxStoreException.class);
      assertThat(failure.getMessage()).contains("SQLState 57P01").contains("terminating connection");
      locker.rollback();
    }
    assertThat(control.pauses()).as("nothing was deleted; the pool's next connection works").hasSize(1);
    assertThat(control.resume(TOPIC)).isTrue();
  }

  /** The backend of the pool's one connection, once it waits for the locker's row lock. */
  private int awaitBlockedBackend() {
    int[] pid = new int[1];
    await().atMost(Duration.ofSeconds(20)).until(() -> {
      try (Connection c = admin.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
              + " AND query LIKE 'DELETE FROM %" + table + "_control%'")) {
        if (!rs.next()) {
          return false;
        }
        pid[0] = rs.getInt(1);
        return true;
      }
    });
    return pid[0];
  }
}
