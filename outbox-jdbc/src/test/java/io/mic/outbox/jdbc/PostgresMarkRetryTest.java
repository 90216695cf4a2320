package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * PostgreSQL ends the session of a mark while it runs (an administrator, a failover): the dispatcher marks
 * the batch again on a new connection instead of publishing it again. A trigger on the table ends the
 * session of the first mark from inside it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresMarkRetryTest {
  private final HikariDataSource dataSource = TestDatabase.POSTGRES.dataSource(4, null);
  private final String table = TestDatabase.uniqueName("outbox_remark");

  @AfterEach
  void tearDown() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table);
      s.execute("DROP FUNCTION IF EXISTS " + table + "_end_first_mark()");
      s.execute("DROP SEQUENCE IF EXISTS " + table + "_marks");
    }
    TestDatabase.dropOutbox(dataSource, table);
    dataSource.close();
  }

  @Test
  void aMarkWhoseSessionEndsIsMadeAgainAndNothingIsPublishedTwice() throws SQLException {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    endTheSessionOfTheFirstMark();
    TestDatabase.appendOrders(dataSource, store, 200);
    Map<UUID, Integer> publications = new ConcurrentHashMap<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).batchSize(50)
        .dispatchFn(e -> publications.merge(e.id(), 1, Integer::sum)).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(30))
          .until(() -> store.countByStatus().getOrDefault(OutboxStatus.DISPATCHED, 0L) == 200);
    }
    assertThat(marksStarted()).as("four marks of 50, and the first one's session ended and tried again")
        .isGreaterThanOrEqualTo(5);
    assertThat(publications).hasSize(200);
    assertThat(publications.values()).as("publications per event").containsOnly(1);
  }

  private void endTheSessionOfTheFirstMark() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE SEQUENCE " + table + "_marks");
      s.execute("CREATE FUNCTION " + table + "_end_first_mark() RETURNS trigger LANGUAGE plpgsql AS $$"
          + " BEGIN IF nextval('" + table + "_marks') = 1 THEN"
          + " PERFORM pg_terminate_backend(pg_backend_pid()); PERFORM pg_sleep(10); END IF; RETURN NULL; END $$");
      s.execute("CREATE TRIGGER end_first_mark BEFORE UPDATE ON " + table + " FOR EACH STATEMENT"
          + " EXECUTE FUNCTION " + table + "_end_first_mark()");
    }
  }

  private long marksStarted() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT last_value FROM " + table + "_marks")) {
      rs.next();
      return rs.getLong(1);
    }
  }
}
