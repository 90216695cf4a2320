package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * PostgreSQL ends the session of a mark while it runs (an administrator, a failover): the dispatcher marks
 * the batch again on a new connection instead of publishing it again. A trigger on the table ends the
 * session of the first mark from inside it. The second test loses the answer of a deleting mark after its
 * commit.
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

  /**
   * A deleting mark committed, then the connection broke before its answer arrived: tried again, the mark
   * finds the rows gone. Without claims only a mark deletes a pending row, so the events count as
   * dispatched, none as lease lost, and nothing goes out twice.
   */
  @Test
  void aDeletingMarkWhoseAnswerWasLostCountsItsEventsDispatched() throws SQLException {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).deleteOnDispatch(true)
        .build();
    store.createSchema();
    TestDatabase.appendOrders(dataSource, store, 200);
    Map<UUID, Integer> publications = new ConcurrentHashMap<>();
    AtomicInteger dispatched = new AtomicInteger();
    AtomicInteger leaseLost = new AtomicInteger();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(losingTheFirstMarksAnswer(store))
        .batchSize(50).dispatchFn(e -> publications.merge(e.id(), 1, Integer::sum)).listener(new OutboxListener() {
          @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
            dispatched.incrementAndGet();
          }

          @Override public void onLeaseLost(OutboxEvent event) {
            leaseLost.incrementAndGet();
          }
        }).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> dispatched.get() + leaseLost.get() == 200);
    }
    assertThat(store.countByStatus().values().stream().mapToLong(Long::longValue).sum()).as("rows left").isZero();
    assertThat(publications).hasSize(200);
    assertThat(publications.values()).as("publications per event").containsOnly(1);
    assertThat(dispatched.get()).isEqualTo(200);
    assertThat(leaseLost.get()).isZero();
  }

  /** {@code store}, except that its first mark commits and then fails as a connection broken before the answer. */
  private static OutboxStore losingTheFirstMarksAnswer(OutboxStore store) {
    AtomicBoolean lose = new AtomicBoolean(true);
    return (OutboxStore) Proxy.newProxyInstance(OutboxStore.class.getClassLoader(), new Class<?>[] {OutboxStore.class},
        (proxy, method, args) -> {
          Object result;
          try {
            result = method.invoke(store, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
          if (method.getName().equals("markDispatched") && lose.getAndSet(false)) {
            throw new OutboxStoreException("marking failed", new SQLException(
                "An I/O error occurred while sending to the backend (injected after the commit)", "08006"));
          }
          return result;
        });
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
