package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.DuplicateEventException;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.InvalidEventException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/** What every JDBC dialect must do beyond the core contract; one small subclass per database. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class JdbcOutboxStoreTest {
  private HikariDataSource dataSource;
  private final List<String> tables = new ArrayList<>();
  private JdbcOutboxStore store;

  protected abstract TestDatabase database();

  protected abstract String expectedDialect();

  /** SQL that creates (%1$s) and drops (%2$s) a schema, or database on MariaDB, named by the argument. */
  protected abstract String[] createAndDropSchema(String name);

  /** SQL listing the index names of schema ?1 (bound as a string). */
  protected abstract String indexNamesOfSchema();

  /** SQL reading the database clock. */
  protected abstract String clockSql();

  /** SQL counting the sessions of this database that wait for a lock. */
  protected abstract String lockWaitsSql();

  @BeforeAll
  void connect() {
    dataSource = database().dataSource(6, null);
  }

  @AfterAll
  void disconnect() {
    dataSource.close();
  }

  @BeforeEach
  void createStore() {
    store = newStore(true);
  }

  @AfterEach
  void dropTables() {
    tables.forEach(t -> TestDatabase.dropOutbox(dataSource, t));
  }

  private JdbcOutboxStore newStore(boolean lockAggregate) {
    String table = TestDatabase.uniqueName("outbox_jt");
    tables.add(table);
    JdbcOutboxStore s = JdbcOutboxStore.builder().dataSource(dataSource).table(table)
        .lockAggregateOnAppend(lockAggregate).build();
    s.createSchema();
    return s;
  }

  private static OutboxEvent event(String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.created")
        .payload("{\"id\":\"" + aggregateId + "\"}").build();
  }

  @Test
  void detectsTheDialect() {
    assertThat(store.dialect().name()).isEqualTo(expectedDialect());
  }

  @Test
  void eventsOfARolledBackTransactionNeverAppear() throws SQLException {
    OutboxEvent e = event("1");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      store.append(c, List.of(event("2"), event("3")));
      c.rollback();
    }
    assertThat(store.find(e.id())).isEmpty();
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.PENDING, 0L);
    assertThat(store.fetchPending(10, false)).isEmpty();
  }

  @Test
  void appendJoinsTheCallersTransactionAndLeavesItOpen() throws SQLException {
    OutboxEvent e = event("1");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      assertThat(c.isClosed()).isFalse();
      assertThat(c.getAutoCommit()).isFalse();
      assertThat(store.find(e.id())).as("not visible before the caller commits").isEmpty();
      char q = store.dialect().identifierQuote();
      try (PreparedStatement ps = c.prepareStatement("SELECT COUNT(*) FROM " + q + store.table() + q + " WHERE id = ?")) {
        store.dialect().setId(ps, 1, e.id());
        try (ResultSet rs = ps.executeQuery()) {
          rs.next();
          assertThat(rs.getInt(1)).as("visible inside the caller's transaction").isEqualTo(1);
        }
      }
      c.commit();
    }
    assertThat(store.find(e.id())).isPresent();
  }

  @Test
  void appendOnAnAutoCommitConnectionFailsAndWritesNothing() throws SQLException {
    OutboxEvent e = event("1");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      assertThatThrownBy(() -> store.append(c, e))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("auto-commit")
          .hasMessageContaining("setAutoCommit(false)");
      assertThatThrownBy(() -> store.append(c, List.of(e))).hasMessageContaining("auto-commit");
    }
    assertThat(store.find(e.id())).isEmpty();
  }

  @Test
  void duplicateIdIsReportedByName() throws SQLException {
    OutboxEvent e = event("1");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
      assertThatThrownBy(() -> store.append(c, e))
          .isInstanceOf(DuplicateEventException.class)
          .hasMessageContaining(e.id().toString());
      c.rollback();
      assertThatThrownBy(() -> store.append(c, List.of(event("2"), e)))
          .isInstanceOf(DuplicateEventException.class)
          .hasMessageContaining(e.id().toString());
      c.rollback();
    }
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.PENDING, 1L);
  }

  @Test
  void invalidTableNamesAreRejectedBeforeAnySql() {
    for (String bad : new String[] {"outbox; DROP TABLE users", "1outbox", "out-box", "a.b.c", "\"outbox\"", "",
        "x".repeat(64), "public.", ".outbox"}) {
      assertThatThrownBy(() -> JdbcOutboxStore.builder().dataSource(dataSource).table(bad))
          .as(bad)
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("table '" + bad + "' is invalid")
          .hasMessageContaining("[A-Za-z_][A-Za-z0-9_]*");
    }
    assertThatThrownBy(() -> JdbcOutboxStore.builder().build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("dataSource is required");
  }

  @Test
  void badEventsNeverReachTheDatabase() {
    assertThatThrownBy(() -> OutboxEvent.builder().aggregate("order", "1").topic("order.created")
        .payload("{\"a\": 1").build())
        .isInstanceOf(InvalidEventException.class).hasMessageStartingWith("payload is not valid JSON");
    String big = "{\"blob\":\"" + "x".repeat(OutboxEvent.MAX_PAYLOAD_BYTES) + "\"}";
    assertThatThrownBy(() -> OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload(big).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageContaining("the limit is 1044480 bytes");
  }

  @Test
  void largestAllowedPayloadRoundTrips() throws SQLException {
    String json = "{\"blob\":\"" + "\u00e9".repeat((OutboxEvent.MAX_PAYLOAD_BYTES - 12) / 2) + "\"}";
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload(json).build();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
    }
    assertThat(store.find(e.id()).orElseThrow().payload()).isEqualTo(json);
  }

  @Test
  void supplementaryCharactersRoundTripAndALoneSurrogateNeverReachesTheDatabase() throws SQLException {
    String json = "{\"face\":\"\uD83D\uDE00\",\"jp\":\"\u65E5\u672C\"}";
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload(json).build();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
    }
    assertThat(store.find(e.id()).orElseThrow().payload()).isEqualTo(json);
    // a lone surrogate would come back as '?': the builder refuses it before any store sees it
    assertThatThrownBy(() -> OutboxEvent.builder().aggregate("order", "1").topic("order.created")
        .payload("{\"face\":\"\uD83D\"}").build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith("payload contains a lone UTF-16 surrogate (U+D83D) at index 9");
  }

  @Test
  void payloadTextIsKeptExactly() throws SQLException {
    String json = "{ \"b\" : 1.50,\n  \"a\" : [true, null], \"b\": 2 }"; // spacing, key order, duplicate key
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload(json).build();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
    }
    assertThat(store.find(e.id()).orElseThrow().payload()).isEqualTo(json);
  }

  @Test
  void createSchemaIsIdempotentAndWorksInAnotherSchema() throws SQLException {
    store.createSchema();
    store.createSchema();
    String schema = TestDatabase.uniqueName("mic_schema");
    String[] ddl = createAndDropSchema(schema);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(ddl[0]);
    }
    try {
      JdbcOutboxStore qualified = JdbcOutboxStore.builder().dataSource(dataSource).table(schema + ".events").build();
      qualified.createSchema();
      qualified.createSchema();
      OutboxEvent e = event("9");
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(false);
        qualified.append(c, e);
        c.commit();
      }
      assertThat(qualified.fetchPending(10, false)).extracting(OutboxEvent::id).containsExactly(e.id());
      List<String> indexes = new ArrayList<>();
      try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(indexNamesOfSchema())) {
        ps.setString(1, schema);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            indexes.add(rs.getString(1));
          }
        }
      }
      assertThat(indexes).contains("events_aggregate_idx", "events_claim_idx", "events_dispatched_idx");
    } finally {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute(ddl[1]);
      }
    }
  }

  @Test
  void shippedDdlIsTheDefaultTable() {
    JdbcOutboxStore defaults = JdbcOutboxStore.builder().dataSource(dataSource).build();
    char q = defaults.dialect().identifierQuote();
    assertThat(defaults.schemaDdl()).contains("CREATE TABLE IF NOT EXISTS " + q + "outbox" + q)
        .contains(q + "outbox_claim_idx" + q)
        .contains(q + "outbox_aggregate_idx" + q)
        .contains("(aggregate_type, aggregate_id, status, created_at, id)");
  }

  @Test
  void createdAtComesFromTheDatabaseClock() throws SQLException {
    Instant before = dbNow();
    OutboxEvent e = event("1");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
    }
    Instant after = dbNow();
    OutboxEvent stored = store.find(e.id()).orElseThrow();
    // two server processes read the clock a microsecond or so apart: allow a millisecond
    assertThat(stored.createdAt()).isBetween(before.minusMillis(1), after.plusMillis(1));
    assertThat(stored.nextAttemptAt()).isBetween(stored.createdAt(), after);
  }

  @Test
  void claimSurvivesAPoolWithoutAutoCommit() {
    HikariDataSource manual = database().dataSource(2, null, false);
    try (manual) {
      JdbcOutboxStore s = JdbcOutboxStore.builder().dataSource(manual).table(store.table()).build();
      OutboxEvent e = event("1");
      try (Connection c = manual.getConnection()) {
        s.append(c, e);
        c.commit();
      }
      OutboxDispatcher.builder().store(s).dispatchFn(x -> {}).useClaim(true).build().dispatchOnce();
      assertThat(store.find(e.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DISPATCHED);
    } catch (SQLException ex) {
      throw new IllegalStateException(ex);
    }
  }

  /**
   * Two transactions write the same aggregate; the one that started first commits last. With the
   * aggregate lock (the default) the second waits for the first, and created_at follows commit order.
   */
  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void aggregateLockMakesCreatedAtFollowCommitOrder() throws Exception {
    List<String> published = publishInterleaved(store);
    assertThat(published).containsExactly("first", "second");
  }

  /** Without the lock the same interleaving publishes the later commit first: the documented caveat. */
  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void withoutTheAggregateLockCommitOrderCanInvertDelivery() throws Exception {
    List<String> published = publishInterleaved(newStore(false));
    assertThat(published).containsExactly("second", "first");
  }

  /**
   * T1 appends "first" and stays open; T2 appends "second" and commits; an ordered dispatcher runs; then
   * T1 commits and the dispatcher runs again.
   */
  private List<String> publishInterleaved(JdbcOutboxStore s) throws Exception {
    List<String> published = new ArrayList<>();
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(s).useClaim(true).preserveAggregateOrder(true)
        .dispatchFn(e -> published.add(e.headers().get("step"))).build();
    CountDownLatch t1Appended = new CountDownLatch(1);
    CountDownLatch t1MayCommit = new CountDownLatch(1);
    CompletableFuture<Void> t1 = CompletableFuture.runAsync(() -> {
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(false);
        s.append(c, stepEvent("first"));
        t1Appended.countDown();
        t1MayCommit.await();
        c.commit();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    t1Appended.await();
    CompletableFuture<Void> t2 = CompletableFuture.runAsync(() -> {
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(false);
        s.append(c, stepEvent("second"));
        c.commit();
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    await().atMost(Duration.ofSeconds(10)).until(() -> t2.isDone() || lockWaits() > 0); // committed, or waits for T1
    dispatcher.dispatchOnce();
    t1MayCommit.countDown();
    t1.get(10, TimeUnit.SECONDS);
    t2.get(10, TimeUnit.SECONDS);
    while (!dispatcher.dispatchOnce().isEmpty()) {
      // drain
    }
    return published;
  }

  private static OutboxEvent stepEvent(String step) {
    return OutboxEvent.builder().aggregate("order", "shared").topic("order.changed").payload("{}")
        .header("step", step).build();
  }

  private int lockWaits() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery(lockWaitsSql())) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private Instant dbNow() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(clockSql())) {
      rs.next();
      return store.dialect().getInstant(rs, 1);
    }
  }

  @Test
  void countByStatusAndFindSeeEveryColumn() throws SQLException {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("[]")
        .header("k", "v").priority(-2).id(UUID.fromString("00000000-0000-4000-8000-000000000001")).build();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
    }
    OutboxEvent s = store.find(e.id()).orElseThrow();
    assertThat(s.headers()).isEqualTo(Map.of("k", "v"));
    assertThat(s.priority()).isEqualTo(-2);
    assertThat(s.payload()).isEqualTo("[]");
  }

  /**
   * A row appended before today's append-time rules (here an aggregate id a broker header cannot carry)
   * must not jam the claim: it is read back, published, and dead-lettered like any rejected event.
   */
  @Test
  void aRowAppendedUnderOlderRulesIsDispatchedOrDeadLettered() throws SQLException {
    OutboxEvent old = event("old");
    OutboxEvent fine = event("fine");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, List.of(old, fine));
      c.commit();
    }
    char q = store.dialect().identifierQuote();
    String table = tables.get(tables.size() - 1);
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("UPDATE " + q + table + q + " SET aggregate_id = ? WHERE aggregate_id = ?")) {
      ps.setString(1, "caf\u00e9");
      ps.setString(2, "old");
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
    List<String> published = new ArrayList<>();
    OutboxDispatcher d = OutboxDispatcher.builder().store(store).useClaim(true).maxAttempts(1).dispatchFn(e -> {
      if (!e.aggregateId().chars().allMatch(ch -> ch < 0x80)) {
        throw new IllegalArgumentException("the broker cannot carry this aggregate id");
      }
      published.add(e.aggregateId());
    }).build();
    assertThat(d.dispatchOnce()).isEqualTo(new io.mic.outbox.DispatchResult(2, 1, 0, 1, 0, 0));
    assertThat(published).containsExactly("fine");
    OutboxEvent dead = store.find(old.id()).orElseThrow();
    assertThat(dead.status()).isEqualTo(OutboxStatus.DLQ);
    assertThat(dead.aggregateId()).isEqualTo("caf\u00e9");
  }
}
