package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.DispatchOrder;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Retention and dead-letter operations on a real database; one small subclass per database. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class OutboxOperationsTest {
  private static final Comparator<OutboxEvent> STORED_ORDER = DispatchOrder.IN_AGGREGATE;
  private static final Pattern REDRIVEN =
      Pattern.compile("redriven at (\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{6}Z) after: (.*)");

  private HikariDataSource dataSource;
  private final List<String> tables = new ArrayList<>();
  private JdbcOutboxStore store;
  private OutboxDeadLetters dlq;

  protected abstract TestDatabase database();

  /** SQL reading the database clock. */
  protected abstract String clockSql();

  /** Runs on every new connection; an odd session time zone, for example. */
  protected String connectionInitSql() {
    return null;
  }

  @BeforeAll
  void connect() {
    dataSource = database().dataSource(4, connectionInitSql());
  }

  @AfterAll
  void disconnect() {
    dataSource.close();
  }

  @BeforeEach
  void createStore() {
    String table = TestDatabase.uniqueName("outbox_op");
    tables.add(table);
    store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    dlq = OutboxDeadLetters.builder().store(store).batchSize(7).build();
  }

  @AfterEach
  void dropTables() {
    tables.forEach(t -> TestDatabase.dropOutbox(dataSource, t));
    tables.clear();
  }

  // ------------------------------------------------------------------ retention

  @Test
  void retentionPurgesOnlyOldDispatchedEventsInBoundedBatches() {
    List<OutboxEvent> old = events(50, "order.created", null);
    List<OutboxEvent> dead = events(5, "order.created", "boom");
    appendAndDispatchWithFailures(concat(old, dead));
    List<OutboxEvent> pending = events(5, "order.created", null);
    append(pending);
    StoredTimes.shift(dataSource, store, Duration.ofDays(10));
    List<OutboxEvent> fresh = events(3, "order.created", null);
    append(fresh);
    assertThat(store.markDispatched(reload(fresh))).hasSize(3); // the pending ones stay pending
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 53L).containsEntry(OutboxStatus.DLQ, 5L)
        .containsEntry(OutboxStatus.PENDING, 5L);

    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).batchSize(7).build();
    assertThat(maintenance.purgeDispatchedBatch(TableAccess.micros(Duration.ofDays(1)))).as("one statement").isEqualTo(7);
    assertThat(maintenance.purgeDispatchedOlderThan(Duration.ofDays(1))).isEqualTo(43);
    assertThat(maintenance.purgeDispatchedOlderThan(Duration.ofDays(1))).isZero();

    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 3L).containsEntry(OutboxStatus.DLQ, 5L)
        .containsEntry(OutboxStatus.PENDING, 5L).containsEntry(OutboxStatus.PROCESSING, 0L);
    fresh.forEach(e -> assertThat(store.find(e.id())).isPresent());
    dead.forEach(e -> assertThat(store.find(e.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DLQ));
    pending.forEach(e -> assertThat(store.find(e.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING));
    old.forEach(e -> assertThat(store.find(e.id())).isEmpty());
  }

  /**
   * A transaction left open elsewhere holds back cleanup (PostgreSQL's xmin horizon, InnoDB's undo
   * history): the store and the maintenance report its age while it runs, and nothing once it commits.
   * H2 cannot tell.
   */
  @Test
  void operatorReadsShowTheHeadOfTheQueueAndATopicsEventsOfARange() {
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).build();
    assertThat(maintenance.oldestLiveEvent()).isEmpty();
    List<OutboxEvent> done = events(1, "order.created", null);
    appendAndDispatchWithFailures(done);
    List<OutboxEvent> older = events(1, "order.created", null);
    append(older);
    StoredTimes.shift(dataSource, store, Duration.ofHours(1));
    List<OutboxEvent> newer = events(2, "order.created", null);
    append(newer);
    append(events(1, "other.topic", null));

    assertThat(maintenance.oldestLiveEvent()).map(OutboxEvent::id).contains(older.get(0).id());
    Instant now = Instant.now();
    List<OutboxMaintenance.EventState> states =
        maintenance.eventsCreatedBetween("order.created", now.minus(Duration.ofDays(1)), now.plus(Duration.ofDays(1)));
    assertThat(states).extracting(OutboxMaintenance.EventState::id)
        .containsExactlyInAnyOrderElementsOf(ids(concat(concat(done, older), newer)));
    assertThat(states).filteredOn(s -> s.id().equals(done.get(0).id()))
        .extracting(OutboxMaintenance.EventState::status).containsExactly(OutboxStatus.DISPATCHED);
    assertThat(states).filteredOn(s -> s.age().compareTo(Duration.ofMinutes(59)) > 0)
        .extracting(OutboxMaintenance.EventState::id).containsExactlyInAnyOrder(done.get(0).id(), older.get(0).id());
    assertThat(states).extracting(OutboxMaintenance.EventState::aggregateId).contains("e0", "e1");
    assertThat(maintenance.eventsCreatedBetween("order.created", now.plus(Duration.ofHours(1)),
        now.plus(Duration.ofHours(2)))).isEmpty();
  }

  @Test
  void oldestTransactionAgeShowsATransactionLeftOpen() throws SQLException {
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).build();
    if (database() == TestDatabase.H2) {
      assertThat(store.oldestTransactionAge()).isEmpty();
      assertThat(maintenance.oldestTransactionAge()).isEmpty();
      return;
    }
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20))
        .until(() -> store.oldestTransactionAge().isEmpty());
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      Instant began = Instant.now();
      store.append(c, events(1, "order.created", null).get(0)); // a writing transaction, then idle
      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20)).until(() -> store.oldestTransactionAge()
          .filter(age -> age.compareTo(Duration.ofMillis(300)) >= 0).isPresent());
      Duration age = store.oldestTransactionAge().orElseThrow();
      // MariaDB's trx_started has whole seconds, taken from the kernel's coarse clock, which lags by up to a
      // tick: the age may read up to a second and a tick long
      assertThat(age).isBetween(Duration.ofMillis(300), Duration.between(began, Instant.now()).plusMillis(1_050));
      assertThat(maintenance.oldestTransactionAge()).hasValueSatisfying(a -> assertThat(a).isGreaterThanOrEqualTo(age));
      c.commit();
    }
    org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(20))
        .until(() -> store.oldestTransactionAge().isEmpty() && maintenance.oldestTransactionAge().isEmpty());
  }

  @Test
  void retentionOptionsAreChecked() {
    assertThatThrownBy(() -> OutboxMaintenance.builder().build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessage("store is required: .store(jdbcOutboxStore)");
    assertThatThrownBy(() -> OutboxMaintenance.builder().store(store).batchSize(10_001).build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessage("batchSize must be between 1 and 10000, was 10001");
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).build();
    assertThatThrownBy(() -> maintenance.purgeDispatchedOlderThan(Duration.ofSeconds(-1)))
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("retention must be >= 0, was PT-1S: Duration.ZERO takes everything up to now");
  }

  // ------------------------------------------------------------------ listing

  @Test
  void listingFiltersDeadLettersAndOrdersThemByCreation() {
    OutboxEvent d1 = event("order.created", "order", "1", "timeout after 30 s");
    OutboxEvent d2 = event("order.created", "order", "2", "401 Unauthorized");
    OutboxEvent d3 = event("invoice.issued", "invoice", "9", "Timeout while connecting");
    OutboxEvent d4 = event("order.created", "order", "1", "disk 100% full");
    OutboxEvent d5 = event("order.created", "order", "3", "disk 100x full");
    OutboxEvent d6 = event("invoice.issued", "invoice", "9", "field a_b missing");
    OutboxEvent d7 = event("invoice.issued", "invoice", "8", "field axb missing");
    OutboxEvent d8 = event("invoice.issued", "invoice", "8", "rate!limit hit");
    OutboxEvent ok = event("order.created", "order", "1", null);
    for (OutboxEvent e : List.of(d1, d2, d3, d4, d5, d6, d7, d8, ok)) {
      append(List.of(e)); // one transaction each, a little apart: distinct created_at on every database
      sleepMillis(2);
    }
    appendAndDispatchWithFailures(List.of());
    OutboxEvent pending = event("order.created", "order", "1", "never tried");
    append(List.of(pending));

    List<OutboxEvent> stored = reload(List.of(d1, d2, d3, d4, d5, d6, d7, d8));
    List<UUID> all = stored.stream().sorted(STORED_ORDER).map(OutboxEvent::id).toList();
    assertThat(ids(DeadLetterQuery.all())).containsExactlyElementsOf(all);
    assertThat(dlq.listDeadLetters(DeadLetterQuery.all())).allSatisfy(e -> {
      assertThat(e.status()).isEqualTo(OutboxStatus.DLQ);
      assertThat(e.attempts()).isEqualTo(1);
      assertThat(e.payload()).isEqualTo("{\"n\":1}");
      assertThat(e.lastError()).startsWith("java.lang.IllegalStateException: ");
    });

    assertThat(ids(q().topic("invoice.issued"))).containsExactlyElementsOf(inOrder(all, d3, d6, d7, d8));
    assertThat(ids(q().aggregate("order", "1"))).containsExactlyElementsOf(inOrder(all, d1, d4));
    assertThat(ids(q().aggregateType("invoice").aggregateId("8"))).containsExactlyElementsOf(inOrder(all, d7, d8));
    assertThat(ids(q().topic("order.created").aggregateId("9"))).isEmpty();
    assertThat(ids(q().limit(3))).containsExactlyElementsOf(all.subList(0, 3));

    assertThat(all).containsExactlyElementsOf(ids(List.of(d1, d2, d3, d4, d5, d6, d7, d8)));
    Instant from = stored.get(1).createdAt();
    Instant before = stored.get(4).createdAt();
    assertThat(ids(q().createdFrom(from).createdBefore(before))).containsExactly(d2.id(), d3.id(), d4.id());
    assertThat(ids(q().createdFrom(from))).hasSize(7);
    assertThat(ids(q().createdBefore(before))).containsExactly(d1.id(), d2.id(), d3.id(), d4.id());

    assertThat(ids(q().errorContains("TIMEOUT"))).as("case-insensitive").containsExactlyElementsOf(inOrder(all, d1, d3));
    assertThat(ids(q().errorContains("100%"))).containsExactly(d4.id());
    assertThat(ids(q().errorContains("%"))).containsExactly(d4.id());
    assertThat(ids(q().errorContains("a_b"))).containsExactly(d6.id());
    assertThat(ids(q().errorContains("_"))).containsExactly(d6.id());
    assertThat(ids(q().errorContains("rate!limit"))).containsExactly(d8.id());
    assertThat(ids(q().errorContains("never tried"))).as("not a dead letter").isEmpty();
  }

  @Test
  void queryOptionsAreChecked() {
    Instant t = Instant.parse("2026-09-29T08:00:00Z");
    assertThatThrownBy(() -> q().createdFrom(t).createdBefore(t).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("createdFrom must be before createdBefore, was 2026-09-29T08:00:00Z and 2026-09-29T08:00:00Z");
    assertThatThrownBy(() -> q().limit(0)).isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("limit must be >= 1, was 0");
    assertThatThrownBy(() -> q().topic(" ")).isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("topic must not be blank, was ' '; leave it unset to match any");
    assertThatThrownBy(() -> q().errorContains("")).isInstanceOf(InvalidConfigurationException.class)
        .hasMessageStartingWith("errorContains must not be empty");
    assertThatThrownBy(() -> OutboxDeadLetters.builder().store(store).batchSize(0).build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessage("batchSize must be between 1 and 10000, was 0");
    assertThat(q().topic("a.b").errorContains("x%").limit(5).build())
        .hasToString("topic=a.b, errorContains='x%', limit=5");
    assertThat(DeadLetterQuery.all()).hasToString("all");
  }

  // ------------------------------------------------------------------ redrive

  @Test
  void redrivingOneEventResetsItAndRecordsTheRedrive() throws SQLException {
    OutboxEvent dead = event("order.created", "order", "1", "boom");
    OutboxEvent ok = event("order.created", "order", "2", null);
    appendAndDispatchWithFailures(List.of(dead, ok));
    OutboxEvent pending = event("order.created", "order", "3", null);
    append(List.of(pending));

    // server processes on different (virtual) CPUs can read clocks a microsecond or so apart
    Instant before = dbNow().minusMillis(1);
    assertThat(dlq.redrive(dead.id())).isTrue();
    Instant after = dbNow().plusMillis(1);
    OutboxEvent redriven = store.find(dead.id()).orElseThrow();
    assertThat(redriven.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(redriven.attempts()).isZero();
    assertThat(redriven.leaseOwner()).isNull();
    assertThat(redriven.leaseUntil()).isNull();
    assertThat(redriven.dispatchedAt()).isNull();
    assertThat(redriven.nextAttemptAt()).isBetween(before, after);
    Matcher m = REDRIVEN.matcher(redriven.lastError());
    assertThat(m.matches()).as(redriven.lastError()).isTrue();
    assertThat(Instant.parse(m.group(1))).as("the same clock reading, in UTC").isEqualTo(redriven.nextAttemptAt());
    assertThat(m.group(2)).isEqualTo("java.lang.IllegalStateException: boom");

    assertThat(dlq.redrive(dead.id())).as("no longer a dead letter").isFalse();
    assertThat(store.find(dead.id()).orElseThrow().lastError()).isEqualTo(redriven.lastError());
    assertThat(dlq.redrive(ok.id())).as("dispatched").isFalse();
    assertThat(dlq.redrive(pending.id())).as("pending").isFalse();
    assertThat(dlq.redrive(UUID.randomUUID())).as("unknown").isFalse();
    assertThat(store.find(ok.id()).orElseThrow()).satisfies(e -> {
      assertThat(e.status()).isEqualTo(OutboxStatus.DISPATCHED);
      assertThat(e.lastError()).isNull();
    });

    List<UUID> published = new ArrayList<>();
    OutboxDispatcher fixed = OutboxDispatcher.builder().store(store).useClaim(true)
        .dispatchFn(e -> published.add(e.id())).build();
    while (!fixed.dispatchOnce().isEmpty()) {
      // drain
    }
    assertThat(published).containsExactlyInAnyOrder(dead.id(), pending.id());
    OutboxEvent done = store.find(dead.id()).orElseThrow();
    assertThat(done.status()).isEqualTo(OutboxStatus.DISPATCHED);
    assertThat(done.attempts()).isEqualTo(1);
    assertThat(done.lastError()).isEqualTo(redriven.lastError());
  }

  @Test
  void redrivingASetTouchesOnlyMatchingDeadLetters() {
    List<OutboxEvent> a = new ArrayList<>();
    List<OutboxEvent> b = new ArrayList<>();
    List<OutboxEvent> all = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      OutboxEvent e = event(i % 5 < 2 ? "a.topic" : "b.topic", "order", Integer.toString(i), "boom " + i);
      (i % 5 < 2 ? a : b).add(e);
      all.add(e);
    }
    List<OutboxEvent> ok = events(3, "a.topic", null);
    appendAndDispatchWithFailures(concat(all, ok));
    append(events(2, "a.topic", null));
    assertThat(a).hasSize(20);
    assertThat(counts()).isEqualTo(Map.of(OutboxStatus.PENDING, 2L, OutboxStatus.PROCESSING, 0L,
        OutboxStatus.DISPATCHED, 3L, OutboxStatus.DLQ, 50L));

    List<UUID> oldestOfA = reload(a).stream().sorted(STORED_ORDER).limit(5).map(OutboxEvent::id).toList();
    assertThat(dlq.redrive(q().topic("a.topic").limit(5).build())).isEqualTo(5);
    assertThat(statusOf(oldestOfA)).containsOnly(OutboxStatus.PENDING);
    assertThat(dlq.redrive(q().topic("a.topic").build())).isEqualTo(15);
    assertThat(counts()).containsEntry(OutboxStatus.DLQ, 30L).containsEntry(OutboxStatus.PENDING, 22L)
        .containsEntry(OutboxStatus.DISPATCHED, 3L);
    assertThat(statusOf(ids(b))).containsOnly(OutboxStatus.DLQ);

    assertThat(dlq.redriveAll()).isEqualTo(30);
    assertThat(dlq.redriveAll()).isZero();
    assertThat(counts()).containsEntry(OutboxStatus.DLQ, 0L).containsEntry(OutboxStatus.PENDING, 52L)
        .containsEntry(OutboxStatus.DISPATCHED, 3L);
    for (OutboxEvent e : reload(all)) {
      assertThat(e.attempts()).isZero();
      assertThat(e.lastError()).matches(REDRIVEN).endsWith("after: java.lang.IllegalStateException: " + e.headers().get("error"));
    }
    reload(ok).forEach(e -> assertThat(e.lastError()).isNull());
  }

  /**
   * The documented ordered-mode caveat: the successor of a dead head is released and published; redriving
   * the head publishes it afterwards. The store does not reorder them.
   */
  @Test
  void aRedrivenOrderedHeadIsPublishedAfterItsReleasedSuccessor() {
    OutboxEvent head = event("order.changed", "order", "7", "boom");
    OutboxEvent next = event("order.changed", "order", "7", null);
    append(List.of(head, next));
    List<UUID> published = new ArrayList<>();
    OutboxDispatcher ordered = OutboxDispatcher.builder().store(store).useClaim(true).preserveAggregateOrder(true)
        .maxAttempts(1).dispatchFn(e -> {
          if (e.headers().containsKey("error") && !published.contains(next.id())) {
            throw new IllegalStateException(e.headers().get("error"));
          }
          published.add(e.id());
        }).build();
    while (!ordered.dispatchOnce().isEmpty()) {
      // drain
    }
    assertThat(published).containsExactly(next.id());
    assertThat(store.find(head.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DLQ);

    assertThat(dlq.redrive(head.id())).isTrue();
    while (!ordered.dispatchOnce().isEmpty()) {
      // drain
    }
    assertThat(published).containsExactly(next.id(), head.id());
  }

  // ------------------------------------------------------------------ purge

  @Test
  void purgingDeletesOnlyMatchingDeadLettersInBatches() {
    List<OutboxEvent> dead = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      dead.add(event(i % 2 == 0 ? "a.topic" : "b.topic", "order", Integer.toString(i), "boom"));
    }
    List<OutboxEvent> ok = events(3, "a.topic", null);
    appendAndDispatchWithFailures(concat(dead, ok));
    List<OutboxEvent> pending = events(2, "a.topic", null);
    append(pending);

    assertThat(dlq.purgeDeadLetters(q().topic("a.topic").limit(4).build())).isEqualTo(4);
    assertThat(dlq.purgeDeadLetters(q().topic("a.topic").build())).isEqualTo(21);
    assertThat(dlq.purgeDeadLetters(q().errorContains("no such error").build())).isZero();
    assertThat(counts()).containsEntry(OutboxStatus.DLQ, 25L).containsEntry(OutboxStatus.DISPATCHED, 3L)
        .containsEntry(OutboxStatus.PENDING, 2L);
    assertThat(dlq.purgeDeadLetters(DeadLetterQuery.all())).isEqualTo(25);
    assertThat(counts()).isEqualTo(Map.of(OutboxStatus.PENDING, 2L, OutboxStatus.PROCESSING, 0L,
        OutboxStatus.DISPATCHED, 3L, OutboxStatus.DLQ, 0L));
    dead.forEach(e -> assertThat(store.find(e.id())).isEmpty());
    concat(ok, pending).forEach(e -> assertThat(store.find(e.id())).isPresent());
  }

  // ------------------------------------------------------------------ helpers

  private static DeadLetterQuery.Builder q() {
    return DeadLetterQuery.builder();
  }

  private List<UUID> ids(DeadLetterQuery.Builder query) {
    return ids(query.build());
  }

  private List<UUID> ids(DeadLetterQuery query) {
    return dlq.listDeadLetters(query).stream().map(OutboxEvent::id).toList();
  }

  private static List<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).toList();
  }

  private static List<UUID> inOrder(List<UUID> order, OutboxEvent... events) {
    List<UUID> wanted = ids(List.of(events));
    return order.stream().filter(wanted::contains).toList();
  }

  private static OutboxEvent event(String topic, String type, String id, String error) {
    OutboxEvent.Builder b = OutboxEvent.builder().aggregate(type, id).topic(topic).payload("{\"n\":1}");
    return (error == null ? b : b.header("error", error)).build();
  }

  private static List<OutboxEvent> events(int n, String topic, String error) {
    return IntStream.range(0, n).mapToObj(i -> event(topic, "order", "e" + i, error)).toList();
  }

  private static List<OutboxEvent> concat(List<OutboxEvent> a, List<OutboxEvent> b) {
    List<OutboxEvent> all = new ArrayList<>(a);
    all.addAll(b);
    return all;
  }

  private void append(List<OutboxEvent> events) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Appends, then dispatches once each: events with an {@code error} header go to the DLQ with that error. */
  private void appendAndDispatchWithFailures(List<OutboxEvent> events) {
    append(events);
    OutboxDispatcher d = OutboxDispatcher.builder().store(store).useClaim(true).maxAttempts(1).batchSize(500)
        .dispatchFn(e -> {
          if (e.headers().containsKey("error")) {
            throw new IllegalStateException(e.headers().get("error"));
          }
        }).build();
    while (!d.dispatchOnce().isEmpty()) {
      // drain
    }
  }

  private static void sleepMillis(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private List<OutboxEvent> reload(List<OutboxEvent> events) {
    return events.stream().map(e -> store.find(e.id()).orElseThrow()).toList();
  }

  private List<OutboxStatus> statusOf(List<UUID> ids) {
    return ids.stream().map(id -> store.find(id).orElseThrow().status()).toList();
  }

  private Map<OutboxStatus, Long> counts() {
    return store.countByStatus();
  }

  private Instant dbNow() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(clockSql())) {
      rs.next();
      return store.dialect().getInstant(rs, 1);
    }
  }
}
