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
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
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
    JdbcOutboxStore store = deletingStoreOf200Events();
    Map<UUID, Integer> publications = new ConcurrentHashMap<>();
    Counts counts = new Counts();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(losingTheFirstMarksAnswer(store, marked -> {}))
        .batchSize(50).dispatchFn(e -> publications.merge(e.id(), 1, Integer::sum)).listener(counts).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> counts.dispatched.get() + counts.leaseLost.get() == 200);
    }
    assertThat(store.countByStatus().values().stream().mapToLong(Long::longValue).sum()).as("rows left").isZero();
    assertThat(publications).hasSize(200);
    assertThat(publications.values()).as("publications per event").containsOnly(1);
    assertThat(counts.dispatched.get()).isEqualTo(200);
    assertThat(counts.leaseLost.get()).isZero();
  }

  /**
   * While the answer of a deleting mark is lost, the application appends a new event under one of the ids the
   * mark deleted, which a store allows once the row is gone. The mark tried again must leave that row alone:
   * it is another event, and it is published in its turn.
   */
  @Test
  void aDeletingMarkTriedAgainLeavesAnIdAppendedAgainAlone() throws SQLException {
    JdbcOutboxStore store = deletingStoreOf200Events();
    AtomicReference<UUID> appendedAgain = new AtomicReference<>();
    Map<UUID, Integer> publications = new ConcurrentHashMap<>();
    Counts counts = new Counts();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder()
        .store(losingTheFirstMarksAnswer(store, marked -> appendedAgain.set(appendAgain(store, marked.get(0)))))
        .batchSize(50).dispatchFn(e -> publications.merge(e.id(), 1, Integer::sum)).listener(counts).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> assertThat(appendedAgain.get())
          .as("the event appended again under a deleted id is published").isNotNull()
          .satisfies(id -> assertThat(publications).containsEntry(id, 2)));
      await().atMost(Duration.ofSeconds(15))
          .until(() -> store.countByStatus().values().stream().mapToLong(Long::longValue).sum() == 0);
    }
    assertThat(publications).hasSize(200);
    assertThat(counts.dispatched.get()).as("200 events and the one appended again").isEqualTo(201);
    assertThat(counts.leaseLost.get()).isZero();
  }

  /** Appends, committed, a new event under the id of {@code deleted}, whose row a mark deleted. */
  private UUID appendAgain(JdbcOutboxStore store, OutboxEvent deleted) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, OutboxEvent.builder().id(deleted.id()).aggregate("order", "again").topic("order.created")
          .payload("{\"again\":true}").build());
      c.commit();
      return deleted.id();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * {@code store}, except that its first mark commits and then fails as a connection broken before the answer;
   * {@code meanwhile} runs between the two with the events of that mark.
   */
  @SuppressWarnings("unchecked") // markDispatched's one argument
  private static OutboxStore losingTheFirstMarksAnswer(OutboxStore store, Consumer<List<OutboxEvent>> meanwhile) {
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
            meanwhile.accept(List.copyOf((Collection<OutboxEvent>) args[0]));
            throw new OutboxStoreException("marking failed", new SQLException(
                "An I/O error occurred while sending to the backend (injected after the commit)", "08006"));
          }
          return result;
        });
  }

  /** A store that deletes on dispatch, over a new table holding 200 pending events. */
  private JdbcOutboxStore deletingStoreOf200Events() throws SQLException {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).deleteOnDispatch(true)
        .build();
    store.createSchema();
    TestDatabase.appendOrders(dataSource, store, 200);
    return store;
  }

  /** Counts what the dispatcher reports dispatched and lease lost. */
  private static final class Counts implements OutboxListener {
    final AtomicInteger dispatched = new AtomicInteger();
    final AtomicInteger leaseLost = new AtomicInteger();

    @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
      dispatched.incrementAndGet();
    }

    @Override public void onLeaseLost(OutboxEvent event) {
      leaseLost.incrementAndGet();
    }
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
