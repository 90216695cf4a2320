package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.jdbc.internal.AppendChannel;
import io.mic.outbox.jdbc.internal.PostgresAppendListener;
import io.mic.outbox.jdbc.internal.TableName;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code notifyOnAppend(true)} on the real PostgreSQL: an append committed by another connection (as another
 * process would) wakes a dispatcher that would otherwise sleep 30 s; a rolled-back append wakes nothing; the
 * listener outlives the loss of its connection.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresNotifyOnAppendTest {
  /** Far longer than any wait below: an event dispatched within it was dispatched by a wake-up. */
  private static final Duration LONG_POLL = Duration.ofSeconds(30);
  private static final Duration WELL_BEFORE_POLL = Duration.ofSeconds(10);

  private final List<AutoCloseable> closeLast = new ArrayList<>();
  private HikariDataSource producerPool;
  private HikariDataSource dispatcherPool;
  private String table;
  private JdbcOutboxStore producer;

  @BeforeEach
  void setUp() {
    producerPool = TestDatabase.POSTGRES.dataSource(2, null);
    dispatcherPool = TestDatabase.POSTGRES.dataSource(4, null);
    table = TestDatabase.uniqueName("outbox_notify");
    producer = JdbcOutboxStore.builder().dataSource(producerPool).table(table).notifyOnAppend(true).build();
    producer.createSchema();
  }

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : closeLast) {
      c.close();
    }
    TestDatabase.dropOutbox(producerPool, table);
    producerPool.close();
    dispatcherPool.close();
  }

  @Test
  void aCommitElsewhereWakesADispatcherLongBeforeItsPoll() throws SQLException {
    Set<UUID> published = ConcurrentHashMap.newKeySet();
    startDispatcher(true, published);
    awaitListening(1);
    for (int i = 0; i < 3; i++) {
      // one stale wake-up (the listener's own after LISTEN) could explain the first, never the next ones
      UUID id = appendAndCommit("order-" + i);
      await().atMost(WELL_BEFORE_POLL).until(() -> published.contains(id));
    }
  }

  @Test
  void withoutNotifyOnAppendTheSameDispatcherWaitsForItsPoll() {
    Set<UUID> published = ConcurrentHashMap.newKeySet();
    UUID first = appendAndCommit("order-1");
    startDispatcher(false, published);
    await().atMost(WELL_BEFORE_POLL).until(() -> published.contains(first)); // the poll at start
    UUID second = appendAndCommit("order-2");
    await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(5)).until(() -> !published.contains(second));
  }

  @Test
  void aRolledBackAppendWakesNothingAndDispatchesNothing() throws SQLException {
    AtomicInteger wakeUps = new AtomicInteger();
    PostgresAppendListener listener = subscribe(wakeUps::incrementAndGet);
    awaitListening(1);
    await().atMost(WELL_BEFORE_POLL).until(() -> wakeUps.get() == 1); // its own, right after LISTEN
    OutboxEvent rolledBack = event("order-1");
    try (Connection c = producerPool.getConnection()) {
      c.setAutoCommit(false);
      producer.append(c, rolledBack);
      c.rollback();
    }
    await().during(Duration.ofSeconds(2)).atMost(Duration.ofSeconds(4)).until(() -> wakeUps.get() == 1);
    assertThat(producer.find(rolledBack.id())).isEmpty();

    appendAndCommit("order-2");
    await().atMost(WELL_BEFORE_POLL).until(() -> wakeUps.get() == 2);
    assertThat(listener.connections()).isEqualTo(1);
  }

  @Test
  void theListenerReconnectsAfterItsBackendIsTerminated() throws SQLException {
    Set<UUID> published = ConcurrentHashMap.newKeySet();
    startDispatcher(true, published);
    int killed = awaitListening(1);
    try (Connection c = producerPool.getConnection(); Statement s = c.createStatement()) {
      s.execute("SELECT pg_terminate_backend(" + killed + ")");
    }
    await().atMost(Duration.ofSeconds(20)).until(() -> listenerPids().stream().anyMatch(pid -> pid != killed));
    for (int i = 0; i < 2; i++) {
      UUID id = appendAndCommit("order-" + i);
      await().atMost(WELL_BEFORE_POLL).until(() -> published.contains(id));
    }
  }

  @Test
  void aClosedSubscriptionReturnsItsConnectionToThePoolNoLongerListening() throws SQLException {
    try (HikariDataSource one = TestDatabase.POSTGRES.dataSource(1, null)) {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(one).table(table).notifyOnAppend(true).build();
      AtomicInteger wakeUps = new AtomicInteger();
      OutboxStore.Subscription s = store.subscribeToAppends(wakeUps::incrementAndGet).orElseThrow();
      awaitListening(1);
      s.close();
      try (Connection c = one.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT count(*) FROM pg_listening_channels()")) {
        rs.next();
        assertThat(rs.getInt(1)).isZero();
      }
    }
  }

  @Test
  void withoutNotifyOnAppendTheStoreOffersNoSubscription() {
    JdbcOutboxStore plain = JdbcOutboxStore.builder().dataSource(dispatcherPool).table(table).build();
    assertThat(plain.subscribeToAppends(() -> { })).isEmpty();
  }

  @Test
  void aSchemaQualifiedTableHasItsOwnChannel() {
    assertThat(AppendChannel.of(TableName.parse("table", "outbox")).name()).isEqualTo("outbox_appends");
    assertThat(AppendChannel.of(TableName.parse("table", "App.Outbox")).name()).isEqualTo("App.Outbox_appends");
    String longName = "t".repeat(60);
    String channel = AppendChannel.of(TableName.parse("table", "s".repeat(60) + "." + longName)).name();
    assertThat(channel).hasSizeLessThanOrEqualTo(63).endsWith("_appends")
        .isNotEqualTo(AppendChannel.of(TableName.parse("table", "x" + "." + longName)).name());
  }

  // ------------------------------------------------------------------ helpers

  private void startDispatcher(boolean notify, Set<UUID> published) {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dispatcherPool).table(table)
        .notifyOnAppend(notify).build();
    AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(true)
        .pollInterval(LONG_POLL).dispatchFn(e -> published.add(e.id())).build();
    closeLast.add(d);
    d.start();
  }

  private PostgresAppendListener subscribe(Runnable wakeUp) {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dispatcherPool).table(table)
        .notifyOnAppend(true).build();
    PostgresAppendListener listener = (PostgresAppendListener) store.subscribeToAppends(wakeUp).orElseThrow();
    closeLast.add(listener);
    return listener;
  }

  /** Waits until {@code count} sessions listen on the table's channel; returns the pid of one. */
  private int awaitListening(int count) throws SQLException {
    await().atMost(Duration.ofSeconds(20)).until(() -> listenerPids().size() == count);
    return listenerPids().get(0);
  }

  /** The sessions whose last statement was LISTEN on this table's channel. */
  private List<Integer> listenerPids() throws SQLException {
    String listen = AppendChannel.of(TableName.parse("table", table)).listen();
    try (Connection c = producerPool.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_stat_activity WHERE query = ?")) {
      ps.setString(1, listen);
      List<Integer> pids = new ArrayList<>();
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          pids.add(rs.getInt(1));
        }
      }
      return pids;
    }
  }

  private UUID appendAndCommit(String aggregateId) {
    OutboxEvent e = event(aggregateId);
    try (Connection c = producerPool.getConnection()) {
      c.setAutoCommit(false);
      producer.append(c, e);
      c.commit();
    } catch (SQLException x) {
      throw new IllegalStateException(x);
    }
    return e.id();
  }

  private static OutboxEvent event(String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.created").payload("{\"n\":1}").build();
  }
}
