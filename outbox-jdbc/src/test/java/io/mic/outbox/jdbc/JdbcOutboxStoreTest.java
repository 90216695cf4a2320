package io.mic.outbox.jdbc;

import io.mic.outbox.ClaimRequest;
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
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
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

  /** The derived names of the indexes createSchema() makes on the outbox table. */
  protected List<String> expectedIndexes() {
    return List.of("aggregate_idx", "claim_idx", "dispatched_idx");
  }

  /** The column list of the index that serves ordered mode's head probe. */
  protected String expectedAggregateIndex() {
    return "(aggregate_type, aggregate_id, status, created_at, id)";
  }

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
    store = newStore();
  }

  @AfterEach
  void dropTables() {
    tables.forEach(t -> TestDatabase.dropOutbox(dataSource, t));
  }

  private JdbcOutboxStore newStore() {
    return newStore(UnaryOperator.identity());
  }

  /** How a test appends inside an open transaction. */
  @FunctionalInterface
  private interface Appender {
    void append(Connection c, List<OutboxEvent> events) throws SQLException;
  }

  /** Through the store: its aggregate lock, then the sequence counter. */
  private static Appender locked(JdbcOutboxStore s) {
    return (c, events) -> {
      if (events.size() == 1) {
        s.append(c, events.get(0));
      } else {
        s.append(c, events);
      }
    };
  }

  /**
   * The store's append after its lock statement (MariaDB and H2 have one; PostgreSQL none): the sequence
   * counter's row locks alone.
   */
  private static Appender withoutTheAggregateLock(JdbcOutboxStore s) {
    AppendStatements append = Statements.of(s.access(), false, false).append();
    return (c, events) -> append.appendCounted(c, events, null);
  }

  /** A store on a table of its own, dropped after the test, with {@code options} applied to its builder. */
  private JdbcOutboxStore newStore(UnaryOperator<JdbcOutboxStore.Builder> options) {
    String table = TestDatabase.uniqueName("outbox_jt");
    tables.add(table);
    JdbcOutboxStore s = options.apply(storeOptions(JdbcOutboxStore.builder().dataSource(dataSource).table(table)))
        .build();
    s.createSchema();
    return s;
  }

  /** The options of every store of the suite beyond its table: {@code partitionInterval}, for example. */
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return builder;
  }

  private static OutboxEvent event(String aggregateId) {
    return event(aggregateId, 0);
  }

  private static OutboxEvent event(String aggregateId, int priority) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.created")
        .payload("{\"id\":\"" + aggregateId + "\"}").priority(priority).build();
  }

  /**
   * An append the database refuses (here a check constraint of the application's on the table) fails naming
   * the constraint, without the row's text: PostgreSQL's detail quotes the failing row, payload included,
   * which may hold a secret and must reach no log.
   */
  @Test
  void anAppendTheDatabaseRefusesIsReportedWithoutTheRowsText() throws SQLException {
    char quote = store.dialect().identifierQuote();
    String table = quote + tables.get(tables.size() - 1) + quote;
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      st.execute("ALTER TABLE " + table + " ADD CONSTRAINT no_refused CHECK (aggregate_id <> 'refused')");
    }
    OutboxEvent refused = OutboxEvent.builder().aggregate("order", "refused").topic("order.created")
        .payload("{\"cardNumber\":\"4111111111111111\"}").header("tenant", "t-secret-9").build();

    for (List<OutboxEvent> events : List.of(List.of(refused), List.of(event("fine"), refused))) {
      assertThatThrownBy(() -> inTransaction(store, true, events)).isInstanceOf(OutboxException.class)
          .hasMessageStartingWith("append of " + events.size() + " event(s) to ")
          .hasMessageEndingWith("; roll the transaction back")
          .satisfies(e -> assertThat(e.getMessage().toLowerCase()).as(e.getMessage()).contains("no_refused")
              .doesNotContain("4111111111111111").doesNotContain("t-secret-9").doesNotContain("order.created"))
          .satisfies(e -> assertThat(e.getCause().getMessage()).as("the cause, which a log prints too")
              .doesNotContain("4111111111111111").doesNotContain("t-secret-9"));
    }
    assertThat(store.countByStatus().values().stream().mapToLong(Long::longValue).sum()).isZero();
  }

  /**
   * A row that cannot become an event (here headers written by hand that are no JSON object) goes to the DLQ
   * with the reason at the read that meets it, and the read returns the others: failing every read on it
   * would stop the whole outbox, and a claim would count an attempt on every event behind it each time.
   */
  @Test
  void aRowThatCannotBecomeAnEventIsDeadLetteredInsteadOfStoppingTheOutbox() throws SQLException {
    char quote = store.dialect().identifierQuote();
    String table = quote + tables.get(tables.size() - 1) + quote;
    ClaimRequest claim = ClaimRequest.of("w-1", 10, Duration.ofMinutes(1));
    Map<String, java.util.function.Supplier<List<OutboxEvent>>> reads = new java.util.LinkedHashMap<>();
    reads.put("read without claims", () -> store.fetchPending(10, false));
    reads.put("ordered read without claims", () -> store.fetchPending(10, true));
    reads.put("claim", () -> store.claim(claim));
    reads.put("ordered claim", () -> store.claim(claim.ordered(true)));
    reads.put("ordered claim of runs", () -> store.claim(claim.ordered(true).inRuns(5)));
    for (Map.Entry<String, java.util.function.Supplier<List<OutboxEvent>>> read : reads.entrySet()) {
      List<OutboxEvent> events = List.of(event(read.getKey() + " 1"), event(read.getKey() + " 2"),
          event(read.getKey() + " 3"));
      inTransaction(store, true, events);
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps = c.prepareStatement("UPDATE " + table + " SET headers = '[]' WHERE id = ?")) {
        store.dialect().setId(ps, 1, events.get(1).id());
        assertThat(ps.executeUpdate()).isEqualTo(1);
      }

      List<OutboxEvent> got = read.getValue().get();

      assertThat(got).as(read.getKey()).extracting(OutboxEvent::id)
          .containsExactly(events.get(0).id(), events.get(2).id());
      try (Connection c = dataSource.getConnection();
          PreparedStatement ps = c.prepareStatement("SELECT status, last_error, lease_owner FROM " + table
              + " WHERE id = ?")) {
        store.dialect().setId(ps, 1, events.get(1).id());
        try (ResultSet rs = ps.executeQuery()) {
          assertThat(rs.next()).isTrue();
          assertThat(rs.getString(1)).as(read.getKey()).isEqualTo("DLQ");
          assertThat(rs.getString(2)).startsWith("unreadable row: the headers column must hold a JSON object of"
              + " strings; fix the row, then redrive the event");
          assertThat(rs.getString(3)).isNull();
        }
      }
      OutboxEvent dead = store.find(events.get(1).id()).orElseThrow(); // an operator can still look at it
      assertThat(dead.status()).isEqualTo(OutboxStatus.DLQ);
      assertThat(dead.headers()).isEmpty();
      assertThat(store.markDispatched(got)).hasSize(2);
    }
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

  /**
   * A dispatcher reads the pauses at the start of a poll, then claims: a pause committed between the two
   * must still hold, so the claim itself reads the control table.
   */
  @Test
  void aClaimStartedAfterAPauseCommittedHonoursItEvenWithAStalePausedSet() throws SQLException {
    OutboxEvent billing = OutboxEvent.builder().aggregate("invoice", "1").topic("billing.issued").payload("{}").build();
    OutboxEvent order = event("1");
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, List.of(billing, order));
      c.commit();
    }
    Set<String> stale = store.pauseState().topics(); // read before the pause commits, as a poll does
    assertThat(stale).isEmpty();
    OutboxControl control = OutboxControl.builder().store(store).build();
    assertThat(control.pause("billing.issued", "consumer rollout, test")).isTrue();

    assertThat(store.fetchPending(10, false, stale)).extracting(OutboxEvent::id).containsExactly(order.id());
    assertThat(store.fetchPending(10, true, stale)).extracting(OutboxEvent::id).containsExactly(order.id());
    assertThat(store.claim(ClaimRequest.of("w1", 10, Duration.ofSeconds(30)).ordered(true).skipping(stale))).extracting(OutboxEvent::id)
        .containsExactly(order.id());
    assertThat(store.claim(ClaimRequest.of("w2", 10, Duration.ofSeconds(30)).inRuns(5).skipping(stale))).isEmpty();
    assertThat(store.claim(ClaimRequest.of("w3", 10, Duration.ofSeconds(30)).ordered(false).skipping(stale))).isEmpty();
    assertThat(store.find(billing.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);

    control.resume("billing.issued");
    assertThat(control.pause(null, "every topic, test")).isTrue();
    assertThat(store.claim(ClaimRequest.of("w4", 10, Duration.ofSeconds(30)).ordered(false).skipping(Set.of()))).isEmpty();
    assertThat(store.claim(ClaimRequest.of("w5", 10, Duration.ofSeconds(30)).inRuns(5).skipping(Set.of()))).isEmpty();
    assertThat(store.fetchPending(10, false, Set.of())).isEmpty();
    control.resume(null);
    assertThat(store.claim(ClaimRequest.of("w6", 10, Duration.ofSeconds(30)).ordered(false).skipping(Set.of()))).extracting(OutboxEvent::id)
        .containsExactly(billing.id());
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
      assertThat(indexes).containsAll(expectedIndexes().stream().map(i -> "events_" + i).toList());
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
        .contains(expectedIndexes().stream().map(i -> q + "outbox_" + i + q).toList())
        .contains(expectedAggregateIndex());
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
   * aggregate lock the second waits for the first, and created_at follows commit order.
   */
  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void aggregateLockMakesCreatedAtFollowCommitOrder() throws Exception {
    List<String> published = publishInterleaved(store, locked(store));
    assertThat(published).containsExactly("first", "second");
  }

  /**
   * Without the aggregate lock the sequence counter's row lock, taken before the clock is read, still
   * makes the second transaction wait: created_at and sequence both follow commit order.
   */
  @Test
  @Timeout(value = 30, unit = TimeUnit.SECONDS)
  void withoutTheAggregateLockTheSequenceCounterStillKeepsCommitOrder() throws Exception {
    List<String> published = publishInterleaved(store, withoutTheAggregateLock(store));
    assertThat(published).containsExactly("first", "second");
    assertThat(committed(store)).containsExactly(new Row("shared", 1), new Row("shared", 2));
  }

  // ---------------------------------------------------------------- the envelope's sequence

  record Row(String aggregateId, long sequence) {}

  /** Every row of the store's table as (aggregate id, sequence), in created_at order. */
  private List<Row> committed(JdbcOutboxStore s) throws SQLException {
    char q = s.dialect().identifierQuote();
    List<Row> rows = new ArrayList<>();
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT aggregate_id, sequence FROM " + q + s.table() + q
            + " ORDER BY created_at, id")) {
      while (rs.next()) {
        rows.add(new Row(rs.getString(1), rs.getLong(2)));
      }
    }
    return rows;
  }

  private void inTransaction(JdbcOutboxStore s, boolean commit, List<OutboxEvent> events) throws SQLException {
    inTransaction(locked(s), commit, events);
  }

  private void inTransaction(Appender appender, boolean commit, List<OutboxEvent> events) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      appender.append(c, events);
      if (commit) {
        c.commit();
      } else {
        c.rollback();
      }
    }
  }

  @Test
  void sequencesCountOnAcrossTransactionsAndARollbackLeavesNoGap() throws SQLException {
    inTransaction(store, true, List.of(event("a"), event("b"), event("a")));
    inTransaction(store, false, List.of(event("a")));
    inTransaction(store, false, List.of(event("a"), event("a"), event("b")));
    inTransaction(store, true, List.of(event("a")));
    inTransaction(store, true, List.of(event("b"), event("a")));

    assertThat(committed(store)).containsExactly(new Row("a", 1), new Row("b", 1), new Row("a", 2),
        new Row("a", 3), new Row("b", 2), new Row("a", 4));
  }

  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void concurrentProducersGetGapFreeSequencesInCommitOrder() throws Exception {
    concurrentProducers(store, locked(store));
  }

  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void concurrentProducersGetGapFreeSequencesWithoutTheAggregateLock() throws Exception {
    concurrentProducers(store, withoutTheAggregateLock(store));
  }

  /**
   * 8 threads append to 3 aggregates, one event or a batch of two over one or two aggregates per
   * transaction, and roll every fifth transaction back. Per aggregate, the committed rows in created_at
   * order must carry exactly 1..N.
   */
  private void concurrentProducers(JdbcOutboxStore s, Appender appender) throws Exception {
    int threads = 8;
    int transactions = 25;
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
    java.util.concurrent.ConcurrentHashMap<String, java.util.concurrent.atomic.AtomicInteger> expected =
        new java.util.concurrent.ConcurrentHashMap<>();
    CountDownLatch start = new CountDownLatch(1);
    List<java.util.concurrent.Future<?>> futures = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      futures.add(pool.submit(() -> {
        start.await();
        for (int i = 0; i < transactions; i++) {
          int n = thread * transactions + i;
          List<OutboxEvent> events = switch (n % 3) {
            case 0 -> List.of(event("hot-" + n % 3));
            case 1 -> List.of(event("hot-" + n % 3), event("hot-" + (n + 1) % 3));
            default -> List.of(event("hot-" + n % 3), event("hot-" + n % 3));
          };
          boolean commit = i % 5 != 4;
          inTransaction(appender, commit, events);
          if (commit) {
            events.forEach(e -> expected.computeIfAbsent(e.aggregateId(),
                k -> new java.util.concurrent.atomic.AtomicInteger()).incrementAndGet());
          }
        }
        return null;
      }));
    }
    start.countDown();
    for (java.util.concurrent.Future<?> f : futures) {
      f.get(100, TimeUnit.SECONDS);
    }
    pool.shutdown();
    Map<String, List<Long>> sequences = new java.util.TreeMap<>();
    for (Row r : committed(s)) {
      sequences.computeIfAbsent(r.aggregateId(), k -> new ArrayList<>()).add(r.sequence());
    }
    assertThat(sequences.keySet()).containsExactly("hot-0", "hot-1", "hot-2");
    sequences.forEach((aggregate, seqs) -> {
      List<Long> oneToN = new ArrayList<>();
      for (long k = 1; k <= expected.get(aggregate).get(); k++) {
        oneToN.add(k);
      }
      assertThat(seqs).as("sequences of %s in created_at order", aggregate).isEqualTo(oneToN);
    });
  }

  /**
   * A table of the shape before the envelope (its four columns and the counter table dropped) is upgraded
   * by createSchema(): its old rows read back with no sequence and the append time as business time, and
   * new events are numbered from 1.
   */
  @Test
  void createSchemaUpgradesATableOfThePreviousShape() throws SQLException {
    OutboxEvent old = event("a");
    inTransaction(store, true, List.of(old));
    char q = store.dialect().identifierQuote();
    String table = q + store.table() + q;
    try (Connection c = dataSource.getConnection(); Statement st = c.createStatement()) {
      for (String column : List.of("sequence", "schema_version", "occurred_at", "trace_parent")) {
        st.execute("ALTER TABLE " + table + " DROP COLUMN " + column);
      }
      st.execute("DROP TABLE " + q + store.table() + "_sequences" + q);
    }
    assertThatThrownBy(() -> store.find(old.id())).isInstanceOf(OutboxException.class);

    store.createSchema();
    store.createSchema();

    OutboxEvent before = store.find(old.id()).orElseThrow();
    assertThat(before.sequence()).isZero();
    assertThat(before.schemaVersion()).isEqualTo(1);
    assertThat(before.occurredAt()).isEqualTo(before.createdAt());
    assertThat(before.traceParent()).isNull();
    OutboxEvent next = event("a");
    inTransaction(store, true, List.of(next));
    assertThat(store.find(next.id()).orElseThrow().sequence()).isEqualTo(1);
    assertThat(store.upgradeEnvelopeDdl()).contains(table).contains(q + store.table() + "_sequences" + q);
  }

  /**
   * T1 appends "first" and stays open; T2 appends "second" and commits; an ordered dispatcher runs; then
   * T1 commits and the dispatcher runs again.
   */
  private List<String> publishInterleaved(JdbcOutboxStore s, Appender appender) throws Exception {
    List<String> published = new ArrayList<>();
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(s).useClaim(true).preserveAggregateOrder(true)
        .dispatchFn(e -> published.add(e.headers().get("step"))).build();
    CountDownLatch t1Appended = new CountDownLatch(1);
    CountDownLatch t1MayCommit = new CountDownLatch(1);
    // a thread each: T1 blocks while T2 runs, which the common pool (parallelism 1 on 2 cores) cannot do
    ExecutorService transactions = Executors.newFixedThreadPool(2);
    try {
      CompletableFuture<Void> t1 = CompletableFuture.runAsync(() -> {
        try (Connection c = dataSource.getConnection()) {
          c.setAutoCommit(false);
          appender.append(c, List.of(stepEvent("first")));
          t1Appended.countDown();
          t1MayCommit.await();
          c.commit();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, transactions);
      t1Appended.await();
      CompletableFuture<Void> t2 = CompletableFuture.runAsync(() -> {
        try (Connection c = dataSource.getConnection()) {
          c.setAutoCommit(false);
          appender.append(c, List.of(stepEvent("second")));
          c.commit();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, transactions);
      await().atMost(Duration.ofSeconds(10)).until(() -> t2.isDone() || lockWaits() > 0); // committed, or waits for T1
      dispatcher.dispatchOnce();
      t1MayCommit.countDown();
      t1.get(10, TimeUnit.SECONDS);
      t2.get(10, TimeUnit.SECONDS);
      while (!dispatcher.dispatchOnce().isEmpty()) {
        // drain
      }
      return published;
    } finally {
      transactions.shutdownNow();
    }
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
   * deleteOnDispatch(true): a published event's row is gone after its mark, in order within its aggregate;
   * a rejected event still reaches the DLQ and stays; nothing else changes.
   */
  @Test
  void deleteOnDispatchDeletesWhatItMarksAndKeepsTheDeadLetters() throws SQLException {
    JdbcOutboxStore deleting = newStore(builder -> builder.deleteOnDispatch(true));
    OutboxEvent a1 = event("a");
    OutboxEvent b = event("b");
    OutboxEvent a2 = event("a");
    OutboxEvent poison = event("poison");
    inTransaction(deleting, true, List.of(a1, b, a2, poison));
    List<UUID> published = new ArrayList<>();
    OutboxDispatcher d = OutboxDispatcher.builder().store(deleting).preserveAggregateOrder(true).maxAttempts(1)
        .dispatchFn(e -> {
          if (e.id().equals(poison.id())) {
            throw new IllegalArgumentException("rejected");
          }
          published.add(e.id());
        }).build();
    assertThat(d.dispatchOnce()).isEqualTo(new io.mic.outbox.DispatchResult(3, 2, 0, 1, 0, 0));
    assertThat(d.dispatchOnce()).as("a2, released by the deletion of its head")
        .isEqualTo(new io.mic.outbox.DispatchResult(1, 1, 0, 0, 0, 0));
    assertThat(d.dispatchOnce().isEmpty()).isTrue();
    assertThat(published).containsExactly(a1.id(), b.id(), a2.id());
    assertThat(List.of(a1, b, a2)).allSatisfy(e -> assertThat(deleting.find(e.id())).isEmpty());
    assertThat(deleting.find(poison.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DLQ);
    assertThat(deleting.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 0L)
        .containsEntry(OutboxStatus.DLQ, 1L).containsEntry(OutboxStatus.PENDING, 0L);
  }

  /** A mark that deletes is fenced like one that updates: a claim that lost its lease deletes nothing. */
  @Test
  void deleteOnDispatchDeletesNothingForALostLease() throws SQLException {
    JdbcOutboxStore deleting = newStore(builder -> builder.deleteOnDispatch(true));
    OutboxEvent e = event("a");
    inTransaction(deleting, true, List.of(e));
    List<OutboxEvent> first = deleting.claim("w1", 10, Duration.ofMillis(200), false);
    List<OutboxEvent> second = new ArrayList<>();
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      second.addAll(deleting.claim("w2", 10, Duration.ofMinutes(1), false));
      return !second.isEmpty();
    });
    assertThat(deleting.markDispatched(first)).as("w1's lease ran out").isEmpty();
    assertThat(deleting.find(e.id()).orElseThrow().leaseOwner()).isEqualTo(second.get(0).leaseOwner());
    assertThat(deleting.markDispatched(second)).containsExactly(e.id());
    assertThat(deleting.find(e.id())).isEmpty();
  }

  /**
   * A deleting mark made again (its first answer lost) leaves alone a new event appended meanwhile under one of
   * the ids it deleted, which the store allows once the row is gone: that event was appended after the batch.
   */
  @Test
  void aDeletingMarkMadeAgainLeavesAnEventAppendedAgainUnderItsId() throws SQLException {
    JdbcOutboxStore deleting = newStore(builder -> builder.deleteOnDispatch(true));
    inTransaction(deleting, true, List.of(event("a"), event("b")));
    List<OutboxEvent> batch = deleting.fetchPending(10, false);
    assertThat(deleting.markDispatched(batch)).hasSize(2);
    OutboxEvent again = OutboxEvent.builder().id(batch.get(0).id()).aggregate("order", "again").topic("order.created")
        .payload("{}").build();
    inTransaction(deleting, true, List.of(again));
    assertThat(deleting.markDispatched(batch)).as("the mark made again").isEmpty();
    assertThat(deleting.find(again.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(deleting.fetchPending(10, false)).extracting(OutboxEvent::aggregateId).containsExactly("again");
  }

  /**
   * A read going on after an event starts there in the claim index, within the event's priority: it returns
   * neither what comes before (a higher priority appended since, the event itself) nor a lower priority, which
   * the next read from the start returns.
   */
  @Test
  void aReadGoingOnAfterAnEventStaysBehindItWithinItsPriority() throws SQLException {
    inTransaction(store, true, List.of(event("a"), event("b"), event("c")));
    inTransaction(store, true, List.of(event("low", -1), event("d")));
    List<OutboxEvent> first = store.fetchPending(2, false);
    assertThat(first).extracting(OutboxEvent::aggregateId).containsExactly("a", "b");
    inTransaction(store, true, List.of(event("high", 9)));

    assertThat(store.fetchPendingAfter(first.get(1), 10, Set.of(), Set.of())).extracting(OutboxEvent::aggregateId)
        .containsExactly("c", "d");
    assertThat(store.fetchPendingAfter(first.get(0), 10, Set.of(), Set.of())).extracting(OutboxEvent::aggregateId)
        .containsExactly("b", "c", "d");
    assertThat(store.fetchPending(10, false)).extracting(OutboxEvent::aggregateId)
        .containsExactly("high", "a", "b", "c", "d", "low");
    assertThatThrownBy(() -> store.fetchPendingAfter(event("built"), 10, Set.of(), Set.of()))
        .isInstanceOf(NullPointerException.class).hasMessageContaining("an event as the store returned it");
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
