package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxException;
import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;

/** The consumer inbox on a real database; one small subclass per database. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class JdbcInboxTest {
  private static final int THREADS = 8;
  private static final int EVENTS = 200;

  protected HikariDataSource dataSource;
  private JdbcInbox inbox;
  private String table;
  private String counters;

  protected abstract TestDatabase database();

  /** SQL reading the database clock. */
  protected abstract String clockSql();

  /** Runs on every new connection; an odd session time zone, for example. */
  protected String connectionInitSql() {
    return null;
  }

  @BeforeAll
  void connect() {
    dataSource = database().dataSource(THREADS + 2, connectionInitSql());
  }

  @AfterAll
  void disconnect() {
    dataSource.close();
  }

  @BeforeEach
  void createTables() throws SQLException {
    table = TestDatabase.uniqueName("inbox_t");
    inbox = JdbcInbox.builder().dataSource(dataSource).table(table).build();
    inbox.createSchema();
    counters = TestDatabase.uniqueName("counter_t");
    execute("CREATE TABLE " + counters + " (event_id VARCHAR(255) NOT NULL PRIMARY KEY, n INTEGER NOT NULL)");
  }

  @AfterEach
  void dropTables() throws SQLException {
    execute("DROP TABLE IF EXISTS " + quoted(table));
    execute("DROP TABLE IF EXISTS " + quoted(table + "_sequences"));
    execute("DROP TABLE IF EXISTS " + counters);
  }

  @Test
  void firstRecordIsTrueAndEveryDuplicateFalse() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      assertThat(inbox.tryRecord(c, "billing", "e-1")).isTrue();
      assertThat(inbox.tryRecord(c, "billing", "e-1")).as("again in the same transaction").isFalse();
      assertThat(inbox.tryRecord(c, "analytics", "e-1")).as("another consumer").isTrue();
      c.commit();
      assertThat(inbox.tryRecord(c, "billing", "e-1")).as("after commit").isFalse();
      assertThat(inbox.tryRecord(c, "billing", "E-1")).as("ids are case-sensitive").isTrue();
      c.commit();
      assertThat(c.getAutoCommit()).isFalse();
    }
    assertThat(records()).containsExactly("analytics/e-1", "billing/E-1", "billing/e-1");
    assertThat(inbox.recordedEventIds("billing")).containsExactlyInAnyOrder("e-1", "E-1");
    assertThat(inbox.recordedEventIds("nobody")).isEmpty();
  }

  @Test
  void aDuplicateLeavesTheCallersTransactionUsable() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      inbox.tryRecord(c, "billing", "e-1");
      c.commit();
      insertCounter(c, "before");
      assertThat(inbox.tryRecord(c, "billing", "e-1")).isFalse();
      insertCounter(c, "after");
      c.commit();
    }
    assertThat(counterIds()).containsExactly("after", "before");
    assertThat(records()).containsExactly("billing/e-1");
  }

  @Test
  void aRolledBackRecordIsGone() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      assertThat(inbox.tryRecord(c, "billing", "e-1")).isTrue();
      c.rollback();
      assertThat(inbox.tryRecord(c, "billing", "e-1")).as("recorded again after the rollback").isTrue();
      c.commit();
    }
    assertThat(records()).containsExactly("billing/e-1");
  }

  @Test
  void anAutoCommitConnectionIsRefusedAndNothingIsWritten() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(true);
      assertThatThrownBy(() -> inbox.tryRecord(c, "billing", "e-1"))
          .isInstanceOf(OutboxException.class)
          .hasMessageContaining("auto-commit")
          .hasMessageContaining("setAutoCommit(false)");
    }
    assertThat(records()).isEmpty();
  }

  @Test
  void badKeysAreRejectedNamingTheValue() throws SQLException {
    String tooLong = "x".repeat(JdbcInbox.MAX_KEY_LENGTH + 1);
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      assertThatThrownBy(() -> inbox.tryRecord(c, null, "e-1"))
          .isInstanceOf(InvalidInboxKeyException.class).hasMessage("consumer must not be blank, was null");
      assertThatThrownBy(() -> inbox.tryRecord(c, "billing", "  "))
          .isInstanceOf(InvalidInboxKeyException.class).hasMessage("eventId must not be blank, was '  '");
      assertThatThrownBy(() -> inbox.tryRecord(c, "billing", "e-1 "))
          .isInstanceOf(InvalidInboxKeyException.class)
          .hasMessage("eventId 'e-1 ' must not start or end with whitespace");
      assertThatThrownBy(() -> inbox.tryRecord(c, "billing", tooLong))
          .isInstanceOf(InvalidInboxKeyException.class)
          .hasMessageStartingWith("eventId is 256 characters long, the limit is 255: 'xxxx");
      assertThatThrownBy(() -> inbox.runOnce(" billing", "e-1", x -> {}))
          .isInstanceOf(InvalidInboxKeyException.class)
          .hasMessage("consumer ' billing' must not start or end with whitespace");
      String longest = "\u00e9".repeat(JdbcInbox.MAX_KEY_LENGTH);
      assertThat(inbox.tryRecord(c, "billing", longest)).isTrue();
      assertThat(inbox.tryRecord(c, "billing", longest)).isFalse();
      c.commit();
      assertThat(records()).containsExactly("billing/" + longest);
    }
  }

  /**
   * Eight threads deliver the same 200 events at once (half of them in reverse order); each effect adds 1
   * to the event's counter in the same transaction. Every counter must end at exactly 1.
   */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void concurrentDeliveriesApplyEachEffectExactlyOnce() throws Exception {
    List<String> ids = IntStream.range(0, EVENTS).mapToObj(i -> "evt-" + i).toList();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (String id : ids) {
        insertCounter(c, id);
      }
      c.commit();
    }
    AtomicInteger applied = new AtomicInteger();
    AtomicInteger duplicates = new AtomicInteger();
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    try {
      List<Future<?>> deliveries = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        List<String> order = new ArrayList<>(ids);
        if (t % 2 == 1) {
          Collections.reverse(order);
        }
        deliveries.add(pool.submit(() -> {
          start.await();
          for (String id : order) {
            boolean first = inbox.runOnce("billing", id, c -> increment(c, id));
            (first ? applied : duplicates).incrementAndGet();
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : deliveries) {
        f.get(50, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(applied.get()).isEqualTo(EVENTS);
    assertThat(duplicates.get()).isEqualTo(EVENTS * (THREADS - 1));
    assertThat(queryLong("SELECT COUNT(*) FROM " + counters + " WHERE n = 1")).isEqualTo(EVENTS);
    assertThat(queryLong("SELECT SUM(n) FROM " + counters)).isEqualTo(EVENTS);
    assertThat(records()).hasSize(EVENTS);
  }

  @Test
  void runOnceRollsBackTheRecordWhenTheEffectFails() throws SQLException {
    insertCounterCommitted("e-1");
    IllegalStateException boom = new IllegalStateException("boom");
    assertThatThrownBy(() -> inbox.runOnce("billing", "e-1", c -> {
      increment(c, "e-1");
      throw boom;
    })).isSameAs(boom);
    assertThat(records()).isEmpty();
    assertThatThrownBy(() -> inbox.runOnce("billing", "e-1", c -> {
      increment(c, "e-1");
      throw new IOException("disk gone");
    })).isInstanceOf(OutboxException.class)
        .hasMessage("the effect of consumer 'billing' for event 'e-1' failed: java.io.IOException;"
            + " the transaction was rolled back and the event is not recorded")
        .hasCauseInstanceOf(IOException.class);
    assertThat(records()).isEmpty();
    assertThat(queryLong("SELECT n FROM " + counters)).isZero();

    assertThat(inbox.runOnce("billing", "e-1", c -> increment(c, "e-1"))).isTrue();
    assertThat(inbox.runOnce("billing", "e-1", c -> increment(c, "e-1"))).isFalse();
    assertThat(queryLong("SELECT n FROM " + counters)).isEqualTo(1);
    assertThat(records()).containsExactly("billing/e-1");
  }

  @Test
  void runOnceLeavesThePoolsConnectionsAsItFoundThem() throws SQLException {
    assertThat(inbox.runOnce("billing", "e-1", c -> assertThat(c.getAutoCommit()).isFalse())).isTrue();
    assertThat(inbox.runOnce("billing", "e-1", c -> {})).isFalse();
    try (Connection c = dataSource.getConnection()) {
      assertThat(c.getAutoCommit()).isTrue();
    }
  }

  @Test
  void purgeDeletesOnlyOldRecordsInBoundedBatches() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < 25; i++) {
        inbox.tryRecord(c, "billing", "old-" + i);
      }
      c.commit();
    }
    StoredTimes.shift(dataSource, inbox, Duration.ofDays(10));
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < 5; i++) {
        inbox.tryRecord(c, "billing", "new-" + i);
      }
      c.commit();
    }
    JdbcInbox batched = JdbcInbox.builder().dataSource(dataSource).table(table).purgeBatchSize(7).build();
    assertThat(batched.purgeBatch(TableAccess.micros(Duration.ofDays(5)))).as("one statement").isEqualTo(7);
    assertThat(batched.purgeOlderThan(Duration.ofDays(5))).isEqualTo(18);
    assertThat(records()).containsExactly("billing/new-0", "billing/new-1", "billing/new-2", "billing/new-3",
        "billing/new-4");
    assertThat(batched.purgeOlderThan(Duration.ofDays(5))).isZero();
  }

  @Test
  void processedAtComesFromTheDatabaseClock() throws SQLException {
    Instant before = dbNow();
    assertThat(inbox.runOnce("billing", "e-1", c -> {})).isTrue();
    Instant after = dbNow();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT processed_at FROM " + quoted(table))) {
      rs.next();
      // server processes on different (virtual) CPUs can read clocks a microsecond or so apart
      assertThat(inbox.dialect().getInstant(rs, 1)).isBetween(before.minusMillis(1), after.plusMillis(1));
    }
  }

  @Test
  void createSchemaIsIdempotentAndNamesItsIndexAfterTheTable() {
    inbox.createSchema();
    inbox.createSchema();
    char q = inbox.dialect().identifierQuote();
    assertThat(inbox.schemaDdl()).contains(q + table + q).contains(q + table + "_processed_idx" + q)
        .doesNotContain("outbox_inbox");
    JdbcInbox defaults = JdbcInbox.builder().dataSource(dataSource).build();
    assertThat(defaults.table()).isEqualTo("outbox_inbox");
    assertThat(defaults.schemaDdl()).contains(q + "outbox_inbox" + q).contains(q + "outbox_inbox_processed_idx" + q)
        .contains("PRIMARY KEY (consumer, event_id)");
  }

  @Test
  void badOptionsAreRejectedAtBuild() {
    assertThatThrownBy(() -> JdbcInbox.builder().build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("dataSource is required");
    assertThatThrownBy(() -> JdbcInbox.builder().dataSource(dataSource).table("inbox; DROP TABLE users"))
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("table 'inbox; DROP TABLE users' is invalid");
    assertThatThrownBy(() -> JdbcInbox.builder().dataSource(dataSource).purgeBatchSize(0).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("purgeBatchSize must be between 1 and 10000, was 0");
    assertThatThrownBy(() -> inbox.purgeOlderThan(Duration.ofMillis(-1)))
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("retention must be >= 0, was PT-0.001S: Duration.ZERO takes everything up to now");
  }

  // ------------------------------------------------------------------ helpers

  /** The business effect: one more delivery applied, in the inbox's transaction. */
  private void increment(Connection c, String id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("UPDATE " + counters + " SET n = n + 1 WHERE event_id = ?")) {
      ps.setString(1, id);
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }

  private void insertCounter(Connection c, String id) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + counters + " (event_id, n) VALUES (?, 0)")) {
      ps.setString(1, id);
      ps.executeUpdate();
    }
  }

  private void insertCounterCommitted(String id) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      insertCounter(c, id);
    }
  }

  private Set<String> counterIds() throws SQLException {
    return strings("SELECT event_id FROM " + counters);
  }

  /** consumer/event_id of every record, sorted in Java (database collations differ). */
  private Set<String> records() throws SQLException {
    return strings("SELECT CONCAT(CONCAT(consumer, '/'), event_id) FROM " + quoted(table));
  }

  private Set<String> strings(String sql) throws SQLException {
    Set<String> values = new TreeSet<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        values.add(rs.getString(1));
      }
    }
    return values;
  }

  // ---------------------------------------------------------------- ordering guard

  private SequenceCheck check(String consumer, String aggregateId, long sequence, boolean commit)
      throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      SequenceCheck result = inbox.checkSequence(c, consumer, "order", aggregateId, sequence);
      if (commit) {
        c.commit();
      } else {
        c.rollback();
      }
      return result;
    }
  }

  @Test
  void theGuardTellsNextDuplicateAndGap() throws SQLException {
    assertThat(check("billing", "o-1", 1, true)).isEqualTo(SequenceCheck.NEXT);
    assertThat(check("billing", "o-1", 1, true)).isEqualTo(SequenceCheck.DUPLICATE);
    assertThat(check("billing", "o-1", 3, true)).isEqualTo(SequenceCheck.GAP);
    assertThat(check("billing", "o-1", 2, false)).as("rolled back: not remembered").isEqualTo(SequenceCheck.NEXT);
    assertThat(check("billing", "o-1", 3, true)).as("2 is still missing").isEqualTo(SequenceCheck.GAP);
    assertThat(check("billing", "o-1", 2, true)).isEqualTo(SequenceCheck.NEXT);
    assertThat(check("billing", "o-1", 3, true)).isEqualTo(SequenceCheck.NEXT);
    assertThat(check("billing", "o-1", 2, true)).as("stale").isEqualTo(SequenceCheck.DUPLICATE);
    assertThat(check("billing", "o-2", 2, true)).as("another aggregate starts at 1").isEqualTo(SequenceCheck.GAP);
    assertThat(check("analytics", "o-1", 1, true)).as("another consumer").isEqualTo(SequenceCheck.NEXT);
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      inbox.recordSequence(c, "billing", "order", "o-2", 41);
      c.commit();
    }
    assertThat(check("billing", "o-2", 42, true)).as("started mid-stream").isEqualTo(SequenceCheck.NEXT);
  }

  @Test
  void theGuardReadsTheMessageHeaders() throws SQLException {
    java.util.Map<String, String> headers = new java.util.HashMap<>(java.util.Map.of("X-Aggregate-Type", "order",
        "x-aggregate-id", "o-7", "x-sequence", "1"));
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      assertThat(inbox.checkSequence(c, "billing", headers)).isEqualTo(SequenceCheck.NEXT);
      assertThat(inbox.checkSequence(c, "billing", headers)).isEqualTo(SequenceCheck.DUPLICATE);
      c.commit();
      headers.remove("x-sequence");
      assertThatThrownBy(() -> inbox.checkSequence(c, "billing", headers))
          .isInstanceOf(InvalidInboxKeyException.class).hasMessageContaining("sequence must be >= 1, was 0");
      c.rollback();
    }
    assertThat(JdbcInbox.sequenceOf(java.util.Map.of("X-Sequence", "17"))).isEqualTo(17);
    assertThat(JdbcInbox.sequenceOf(java.util.Map.of())).isZero();
    assertThatThrownBy(() -> JdbcInbox.sequenceOf(java.util.Map.of("x-sequence", "-3")))
        .isInstanceOf(InvalidInboxKeyException.class).hasMessage("header x-sequence must be a whole number >= 1,"
            + " was '-3'");
  }

  /** THREADS threads deliver sequence 1 of a new aggregate at once: exactly one is told NEXT. */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void concurrentFirstDeliveriesGetOneNext() throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<SequenceCheck>> results = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      results.add(pool.submit(() -> {
        start.await();
        return check("billing", "fresh", 1, true);
      }));
    }
    start.countDown();
    List<SequenceCheck> outcomes = new ArrayList<>();
    for (Future<SequenceCheck> f : results) {
      outcomes.add(f.get(50, TimeUnit.SECONDS));
    }
    pool.shutdown();
    assertThat(outcomes).filteredOn(o -> o == SequenceCheck.NEXT).hasSize(1);
    assertThat(outcomes).filteredOn(o -> o == SequenceCheck.DUPLICATE).hasSize(THREADS - 1);
  }

  /**
   * THREADS threads each get every sequence 1..20 of one aggregate twice, in its own shuffled order, and
   * hold a GAP (retry it later). Each sequence is applied exactly once, the applied ones come in order,
   * and every other delivery is a duplicate.
   */
  @Test
  @Timeout(value = 120, unit = TimeUnit.SECONDS)
  void concurrentOutOfOrderDeliveriesApplyEachSequenceOnceInOrder() throws Exception {
    int sequences = 20;
    List<Long> applied = Collections.synchronizedList(new ArrayList<>());
    AtomicInteger duplicates = new AtomicInteger();
    AtomicInteger gaps = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(THREADS);
    CountDownLatch start = new CountDownLatch(1);
    List<Future<?>> futures = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      int thread = t;
      futures.add(pool.submit(() -> {
        java.util.Deque<Long> inbox = new java.util.ArrayDeque<>();
        List<Long> deliveries = new ArrayList<>();
        for (long n = 1; n <= sequences; n++) {
          deliveries.add(n);
          deliveries.add(n);
        }
        Collections.shuffle(deliveries, new java.util.Random(thread));
        inbox.addAll(deliveries);
        start.await();
        while (!inbox.isEmpty()) {
          long n = inbox.poll();
          try (Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            switch (this.inbox.checkSequence(c, "billing", "order", "hot", n)) {
              case NEXT -> applied.add(n); // under the guard row's lock, so in commit order
              case DUPLICATE -> duplicates.incrementAndGet();
              case GAP -> {
                gaps.incrementAndGet();
                inbox.add(n); // hold it: try again after the others
              }
            }
            c.commit();
          }
        }
        return null;
      }));
    }
    start.countDown();
    for (Future<?> f : futures) {
      f.get(110, TimeUnit.SECONDS);
    }
    pool.shutdown();
    List<Long> oneToN = new ArrayList<>();
    for (long n = 1; n <= sequences; n++) {
      oneToN.add(n);
    }
    assertThat(applied).isEqualTo(oneToN);
    assertThat(duplicates.get()).isEqualTo(THREADS * sequences * 2 - sequences);
    assertThat(gaps.get()).as("out-of-order deliveries were held").isPositive();
  }

  private long queryLong(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private String quoted(String name) {
    char q = inbox.dialect().identifierQuote();
    return q + name + q;
  }

  private void execute(String sql) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  private Instant dbNow() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(clockSql())) {
      rs.next();
      return inbox.dialect().getInstant(rs, 1);
    }
  }
}
