package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.ClaimedBatch;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStatus;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Claims held by transactions ({@code transactionalClaims(true)}) on a real PostgreSQL: the rows stay as they
 * were while locked, other claimers skip them, the batch's outcomes commit together, and the rows come back
 * when the holding session ends (a dead process) or idles past the lease (a frozen one).
 */
class PostgresTransactionalClaimsTest {
  private static final Duration LEASE = Duration.ofMinutes(1);
  /** For the table's DDL, which must not wait for a pool whose claims are held. */
  private static HikariDataSource admin;
  /**
   * The test's pool: closed after the test, as a process's end closes its connections, which ends the claims
   * its stores still hold.
   */
  private HikariDataSource dataSource;
  private String table;
  private JdbcOutboxStore store;

  @BeforeAll
  static void connect() {
    admin = TestDatabase.POSTGRES.dataSource(2, null);
  }

  @AfterAll
  static void disconnect() {
    admin.close();
  }

  @BeforeEach
  void createTable() {
    dataSource = TestDatabase.POSTGRES.dataSource(24, null);
    table = TestDatabase.uniqueName("outbox_held");
    store = newStore(false);
    store.createSchema();
  }

  @AfterEach
  void dropTable() {
    dataSource.close();
    TestDatabase.dropOutbox(admin, table);
  }

  /** Another store on the same table: another process's view. */
  private JdbcOutboxStore newStore(boolean deleteOnDispatch) {
    return JdbcOutboxStore.builder().dataSource(dataSource).table(table).transactionalClaims(true)
        .deleteOnDispatch(deleteOnDispatch).build();
  }

  @Test
  void aClaimLocksItsRowsWithoutChangingThemAndOthersSkipThem() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 5);
    List<OutboxEvent> first = store.claimBatch(ClaimRequest.of("w1", 3, LEASE)).events();

    assertThat(first).extracting(OutboxEvent::id).containsExactly(ids(events.subList(0, 3)).toArray(UUID[]::new));
    assertThat(first).allSatisfy(e -> {
      assertThat(e.status()).as("as a lease returns it").isEqualTo(OutboxStatus.PROCESSING);
      assertThat(e.leaseOwner()).isEqualTo("w1");
      assertThat(e.attempts()).isEqualTo(1);
    });
    OutboxEvent row = store.find(events.get(0).id()).orElseThrow();
    assertThat(row.status()).as("the row itself is unchanged").isEqualTo(OutboxStatus.PENDING);
    assertThat(row.attempts()).isZero();
    assertThat(row.leaseOwner()).isNull();

    List<OutboxEvent> second = newStore(false).claimBatch(ClaimRequest.of("w2", 5, LEASE)).events();
    assertThat(second).as("another process skips the locked rows")
        .extracting(OutboxEvent::id).containsExactly(ids(events.subList(3, 5)).toArray(UUID[]::new));
  }

  @Test
  void aClaimLeavesOutPausedTopicsAndGoesOnAfterItsPosition() throws Exception {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      events.add(OutboxEvent.builder().aggregate("order", "o-" + i).topic(i % 2 == 0 ? "orders" : "payments")
          .payload("{\"n\":" + i + "}").build());
    }
    append(events);
    Set<String> paused = Set.of("payments");

    List<OutboxEvent> first = store.claimBatch(ClaimRequest.of("w1", 1, LEASE).skipping(paused)).events();
    OutboxEvent position = store.find(events.get(2).id()).orElseThrow();
    List<OutboxEvent> second = newStore(false).claimBatch(ClaimRequest.of("w2", 5, LEASE).skipping(paused)
        .after(position)).events();

    assertThat(first).extracting(OutboxEvent::id).containsExactly(events.get(0).id());
    assertThat(first.get(0).leaseOwner()).isEqualTo("w1");
    assertThat(second).as("only what follows the position, of the topic not paused")
        .extracting(OutboxEvent::id).containsExactly(events.get(4).id());
    assertThat(second.get(0).leaseOwner()).isEqualTo("w2");
    assertThat(second.get(0).status()).isEqualTo(OutboxStatus.PROCESSING);
    assertThat(second.get(0).leaseUntil()).isAfter(position.createdAt().plus(LEASE).minusSeconds(1));
  }

  @Test
  void theOutcomesOfABatchCommitWithItsLastOne() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 4);
    ClaimedBatch batch = store.claimBatch(ClaimRequest.of("w", 4, LEASE));
    List<OutboxEvent> claimed = batch.events();

    assertThat(batch.markDispatched(claimed.subList(0, 2)))
        .containsExactlyInAnyOrderElementsOf(ids(events.subList(0, 2)));
    assertThat(batch.markDispatched(claimed.subList(0, 1))).as("an outcome again changes nothing").isEmpty();
    assertThat(batch.scheduleRetry(claimed.get(2), Duration.ofMinutes(5), "broker said no")).isTrue();
    assertThat(store.find(events.get(0).id()).orElseThrow().status()).as("not committed while one event is open")
        .isEqualTo(OutboxStatus.PENDING);

    assertThat(batch.markDead(claimed.get(3), "poison")).isTrue();

    OutboxEvent dispatched = store.find(events.get(0).id()).orElseThrow();
    assertThat(dispatched.status()).isEqualTo(OutboxStatus.DISPATCHED);
    assertThat(dispatched.attempts()).as("the mark counts the attempt").isEqualTo(1);
    assertThat(dispatched.leaseOwner()).isEqualTo("w");
    assertThat(dispatched.dispatchedAt()).isNotNull();
    OutboxEvent retried = store.find(events.get(2).id()).orElseThrow();
    assertThat(retried.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(retried.attempts()).isEqualTo(1);
    assertThat(retried.lastError()).isEqualTo("broker said no");
    assertThat(retried.nextAttemptAt()).isAfter(retried.createdAt().plus(Duration.ofMinutes(4)));
    OutboxEvent dead = store.find(events.get(3).id()).orElseThrow();
    assertThat(dead.status()).isEqualTo(OutboxStatus.DLQ);
    assertThat(dead.attempts()).isEqualTo(1);
    assertThat(store.claimBatch(ClaimRequest.of("w2", 4, LEASE)).events()).as("nothing else is due").isEmpty();
  }

  @Test
  void aClaimWithoutItsBatchIsRefusedSayingWhatToCall() {
    assertThatThrownBy(() -> store.claim(ClaimRequest.of("w", 1, LEASE)))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("outbox table " + table).hasMessageContaining("transactionalClaims(true)")
        .hasMessageContaining("claimBatch(request)");
  }

  @Test
  void aBatchClosedWithEventsLeftWithoutAnOutcomeGivesItsRowsBackAtOnce() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 2);
    ClaimedBatch batch = store.claimBatch(ClaimRequest.of("w", 2, LEASE));
    assertThat(batch.markDispatched(batch.events().subList(0, 1))).hasSize(1);

    batch.close();

    assertThat(newStore(false).claimBatch(ClaimRequest.of("next", 2, LEASE)).events())
        .as("well before the lease of a minute, the outcome recorded rolled back with the rest")
        .extracting(OutboxEvent::id).containsExactlyInAnyOrderElementsOf(ids(events));
    assertThat(batch.markDispatched(batch.events())).as("a closed batch records nothing").isEmpty();
  }

  @Test
  void aReleaseGivesTheRowsBackUntriedAfterTheDelay() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 2);
    ClaimedBatch batch = store.claimBatch(ClaimRequest.of("w", 2, LEASE));

    assertThat(batch.release(batch.events(), Duration.ofMinutes(5))).containsExactlyInAnyOrderElementsOf(ids(events));

    OutboxEvent row = store.find(events.get(0).id()).orElseThrow();
    assertThat(row.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(row.attempts()).isZero();
    assertThat(row.nextAttemptAt()).isAfter(row.createdAt().plus(Duration.ofMinutes(4)));
  }

  @Test
  void aDeletingMarkDeletesTheRowsAtTheCommit() throws Exception {
    JdbcOutboxStore deleting = newStore(true);
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, deleting, 3);
    ClaimedBatch batch = deleting.claimBatch(ClaimRequest.of("w", 3, LEASE));

    assertThat(batch.markDispatched(batch.events())).containsExactlyInAnyOrderElementsOf(ids(events));

    assertThat(deleting.countByStatus().values().stream().mapToLong(Long::longValue).sum()).isZero();
  }

  @Test
  void rowsComeBackAtOnceWhenTheHoldingSessionEnds() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 3);
    ClaimedBatch dying = store.claimBatch(ClaimRequest.of("dying", 3, LEASE));
    terminateHoldingSessions();

    JdbcOutboxStore other = newStore(false);
    ClaimedBatch survivor = other.claimBatch(ClaimRequest.of("survivor", 3, LEASE));
    assertThat(survivor.events()).as("well before the lease of a minute").extracting(OutboxEvent::id)
        .containsExactlyInAnyOrderElementsOf(ids(events));

    assertThat(dying.renewLeases(dying.events(), LEASE)).as("the dead batch knows it lost them").isEmpty();
    assertThat(survivor.markDispatched(survivor.events())).hasSize(3);
    assertThat(dying.markDispatched(dying.events())).as("and marks nothing").isEmpty();
    assertThat(store.find(events.get(0).id()).orElseThrow().leaseOwner()).isEqualTo("survivor");
  }

  @Test
  void itsOwnStoreTakesTheEventsOfABatchWhoseSessionEndedOnceARenewalFindsItGone() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 3);
    ClaimedBatch dying = store.claimBatch(ClaimRequest.of("dying", 3, LEASE));
    terminateHoldingSessions();

    assertThat(store.claimBatch(ClaimRequest.of("next", 3, LEASE)).events())
        .as("left out: the store still counts them held").isEmpty();
    assertThat(dying.renewLeases(dying.events(), LEASE)).as("the renewal finds the session gone").isEmpty();
    assertThat(store.claimBatch(ClaimRequest.of("after", 3, LEASE)).events()).extracting(OutboxEvent::id)
        .containsExactlyElementsOf(ids(events));
  }

  @Test
  void aBatchWhoseSessionEndedCountsItsAttemptAtTheNextClaim() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 3);
    store.claimBatch(ClaimRequest.of("dying", 3, LEASE)).events();
    terminateHoldingSessions();

    List<OutboxEvent> again = newStore(false).claimBatch(ClaimRequest.of("survivor", 3, LEASE)).events();

    assertThat(again).as("the dead batch's attempt, and this one's").extracting(OutboxEvent::attempts)
        .containsExactly(2, 2, 2);
    for (OutboxEvent e : events) {
      OutboxEvent row = store.find(e.id()).orElseThrow();
      assertThat(row.attempts()).as("counted in the row before the claim").isEqualTo(1);
      assertThat(row.status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(row.lastError()).contains("claim dying ended without an outcome");
    }
  }

  @Test
  void storesThatLookAtOnceCountAnEndedBatchOnce() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 5);
    store.claimBatch(ClaimRequest.of("dying", 5, LEASE)).events();
    terminateHoldingSessions();
    List<JdbcOutboxStore> others = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      others.add(newStore(false));
    }

    CountDownLatch start = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(others.size());
    List<Future<ClaimedBatch>> claims = new ArrayList<>();
    try {
      for (int i = 0; i < others.size(); i++) {
        JdbcOutboxStore other = others.get(i);
        String owner = "other-" + i;
        claims.add(pool.submit(() -> {
          start.await();
          return other.claimBatch(ClaimRequest.of(owner, 5, LEASE));
        }));
      }
      start.countDown();
      for (int i = 0; i < others.size(); i++) {
        // back untried: the ended batch is counted now, or, if a claim took its events first, at the next look
        ClaimedBatch batch = claims.get(i).get(30, TimeUnit.SECONDS);
        batch.release(batch.events(), Duration.ZERO);
      }
    } finally {
      pool.shutdownNow();
    }

    List<OutboxEvent> last = newStore(false).claimBatch(ClaimRequest.of("last", 5, LEASE)).events();

    assertThat(last).extracting(OutboxEvent::id).containsExactlyInAnyOrderElementsOf(ids(events));
    for (OutboxEvent e : events) {
      assertThat(store.find(e.id()).orElseThrow().attempts()).as("one count for the one ended batch").isEqualTo(1);
    }
    assertThat(claimJournalRows()).as("the last batch's row only").isEqualTo(1);
  }

  @Test
  void anEventWhosePublicationEndsItsSessionEveryTimeGoesToTheDlqAfterMaxAttempts() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 1);
    for (int crash = 1; crash <= 3; crash++) { // a publication that brings its process down, three times
      assertThat(newStore(false).claimBatch(ClaimRequest.of("crash-" + crash, 1, LEASE)).events()).hasSize(1);
      terminateHoldingSessions();
    }
    List<OutboxEvent> published = new ArrayList<>();
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).useClaim(true).maxAttempts(3)
        .dispatchFn(published::add).build();

    dispatcher.dispatchOnce();

    assertThat(published).as("not tried a fourth time").isEmpty();
    OutboxEvent row = store.find(events.get(0).id()).orElseThrow();
    assertThat(row.status()).isEqualTo(OutboxStatus.DLQ);
    assertThat(row.attempts()).isEqualTo(4);
    assertThat(row.lastError()).contains("claimed 4 times without an outcome");
  }

  @Test
  void anEndedBatchWhoseEventsALiveBatchHoldsIsCountedLaterWithoutWaitingForIt() throws Exception {
    JdbcOutboxStore second = newStore(false);
    assertThat(second.claimBatch(ClaimRequest.of("second-early", 3, LEASE)).events()).isEmpty(); // its look at the journal
    lookAtJournalNotBefore(second, Duration.ofHours(1)); // and its last for the test
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 3);
    newStore(false).claimBatch(ClaimRequest.of("first", 3, LEASE)).events();
    terminateHoldingSessions();
    List<OutboxEvent> retaken = second.claimBatch(ClaimRequest.of("second", 3, LEASE)).events(); // before anyone counted
    assertThat(retaken).extracting(OutboxEvent::attempts).containsExactly(1, 1, 1);

    List<OutboxEvent> third = assertTimeoutPreemptively(Duration.ofSeconds(10),
        () -> newStore(false).claimBatch(ClaimRequest.of("third", 3, LEASE)).events(), "waited for the live batch's locks");
    assertThat(third).isEmpty();
    assertThat(claimJournalRows()).as("the first batch's row waits, beside the live one's").isEqualTo(2);

    terminateHoldingSessions();
    List<OutboxEvent> fourth = newStore(false).claimBatch(ClaimRequest.of("fourth", 3, LEASE)).events();
    assertThat(fourth).as("both ended batches counted, once each").extracting(OutboxEvent::attempts)
        .containsExactly(3, 3, 3);
    assertThat(store.find(events.get(0).id()).orElseThrow().attempts()).isEqualTo(2);
  }

  @Test
  void batchesEndedByTheirOutcomesCountNoMoreAttemptsAndLeaveNothingBehind() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 3);
    ClaimedBatch marked = store.claimBatch(ClaimRequest.of("marked", 1, LEASE));
    marked.markDispatched(marked.events());
    ClaimedBatch released = store.claimBatch(ClaimRequest.of("released", 1, LEASE));
    ClaimedBatch retried = store.claimBatch(ClaimRequest.of("retried", 1, LEASE));
    released.release(released.events(), Duration.ZERO);
    retried.scheduleRetry(retried.events().get(0), Duration.ZERO, "broker said no");

    List<OutboxEvent> next = newStore(false).claimBatch(ClaimRequest.of("next", 3, LEASE)).events();

    assertThat(next).extracting(OutboxEvent::id).containsExactly(events.get(1).id(), events.get(2).id());
    assertThat(next).as("the release counted none, the retry one").extracting(OutboxEvent::attempts)
        .containsExactly(1, 2);
    assertThat(claimJournalRows()).as("only the batch in flight").isEqualTo(1);
  }

  @Test
  void aBatchIdlePastItsLeaseLosesItsRowsAndCanMarkNothing() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 2);
    Duration lease = Duration.ofMillis(500);
    ClaimedBatch frozen = store.claimBatch(ClaimRequest.of("frozen", 2, lease));

    JdbcOutboxStore other = newStore(false);
    List<ClaimedBatch> taken = new ArrayList<>();
    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100)).until(() -> {
      ClaimedBatch batch = other.claimBatch(ClaimRequest.of("survivor", 2, LEASE));
      return !batch.events().isEmpty() && taken.add(batch);
    });
    ClaimedBatch survivor = taken.get(0);
    assertThat(survivor.events()).extracting(OutboxEvent::id).containsExactlyInAnyOrderElementsOf(ids(events));

    assertThat(frozen.markDispatched(frozen.events())).isEmpty();
    assertThat(frozen.scheduleRetry(frozen.events().get(0), Duration.ZERO, "late")).isFalse();
    assertThat(survivor.markDispatched(survivor.events())).hasSize(2);
    assertThat(store.find(events.get(1).id()).orElseThrow().leaseOwner()).isEqualTo("survivor");
  }

  @Test
  void renewalsKeepABatchPastTheIdleTimeout() throws Exception {
    TestDatabase.appendOrders(dataSource, store, 2);
    Duration lease = Duration.ofMillis(600);
    ClaimedBatch alive = store.claimBatch(ClaimRequest.of("alive", 2, lease));
    JdbcOutboxStore other = newStore(false);

    long until = System.nanoTime() + Duration.ofSeconds(3).toNanos();
    while (System.nanoTime() < until) { // three leases long, renewed every third of one, as the dispatcher does
      assertThat(alive.renewLeases(alive.events(), lease)).hasSize(2);
      assertThat(other.claimBatch(ClaimRequest.of("other", 2, LEASE)).events()).isEmpty();
      Thread.sleep(lease.toMillis() / 3);
    }

    assertThat(alive.markDispatched(alive.events())).hasSize(2);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 2L);
  }

  @Test
  void aLockedHeadStillBlocksItsAggregateInOrderedMode() throws Exception {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      events.add(OutboxEvent.builder().aggregate("order", "same").topic("order.changed").payload("{}").build());
    }
    events.add(OutboxEvent.builder().aggregate("order", "other").topic("order.changed").payload("{}").build());
    append(events);

    ClaimedBatch first = store.claimBatch(ClaimRequest.of("first", 1, LEASE).ordered(true));
    assertThat(first.events()).extracting(OutboxEvent::id).containsExactly(events.get(0).id());
    assertThat(newStore(false).claimBatch(ClaimRequest.of("second", 10, LEASE).ordered(true)).events()).as("only the other aggregate's head")
        .extracting(OutboxEvent::id).containsExactly(events.get(3).id());

    first.markDispatched(first.events());
    List<OutboxEvent> run = newStore(false).claimBatch(ClaimRequest.of("third", 10, LEASE).inRuns(10)).events();
    assertThat(run).as("the rest of the aggregate as one run, in order")
        .extracting(OutboxEvent::id).containsExactly(events.get(1).id(), events.get(2).id());
    assertThat(newStore(false).claimBatch(ClaimRequest.of("fourth", 10, LEASE).inRuns(10)).events()).isEmpty();
  }

  @Test
  void dispatchersOfSeveralProcessesPublishEveryEventOnce() throws Exception {
    JdbcOutboxStore deleting = newStore(true);
    int n = 3_000;
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, deleting, n);
    Map<UUID, AtomicInteger> published = new ConcurrentHashMap<>();
    Set<UUID> dispatched = Collections.synchronizedSet(new HashSet<>());
    List<AsyncOutboxDispatcher> dispatchers = new ArrayList<>();
    for (int p = 0; p < 3; p++) {
      dispatchers.add(AsyncOutboxDispatcher.builder().name("p" + p).store(newStore(true)).useClaim(true)
          .workers(2).batchSize(100).pollInterval(Duration.ofMillis(20))
          .dispatchFn(e -> published.computeIfAbsent(e.id(), k -> new AtomicInteger()).incrementAndGet())
          .listener(new OutboxListener() {
            @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
              dispatched.add(event.id());
            }
          }).build());
    }
    try {
      dispatchers.forEach(AsyncOutboxDispatcher::start);
      await().atMost(Duration.ofSeconds(60)).until(() -> dispatched.size() == n);
    } finally {
      dispatchers.forEach(AsyncOutboxDispatcher::close);
    }
    assertThat(published.keySet()).containsExactlyInAnyOrderElementsOf(ids(events));
    assertThat(published.values()).as("no event twice: disjoint claims, no crash")
        .allSatisfy(count -> assertThat(count.get()).isEqualTo(1));
    assertThat(deleting.countByStatus().values().stream().mapToLong(Long::longValue).sum()).isZero();
  }

  @Test
  void aFailingEventGoesToTheDlqAfterMaxAttempts() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 1);
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).useClaim(true).maxAttempts(3)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(1))
        .dispatchFn(e -> {
          throw new IllegalStateException("rejected");
        }).build();

    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20)).until(() -> {
      dispatcher.dispatchOnce();
      return store.find(events.get(0).id()).orElseThrow().status() == OutboxStatus.DLQ;
    });
    assertThat(store.find(events.get(0).id()).orElseThrow().attempts()).isEqualTo(3);
  }

  @Test
  void withoutItsClaimJournalAClaimSaysWhatToCreateAndTakesNothing() throws Exception {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 1);
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE " + table + "_claims");
    }

    assertThatThrownBy(() -> newStore(false).claimBatch(ClaimRequest.of("w", 1, LEASE)).events())
        .isInstanceOf(OutboxStoreException.class)
        .hasMessageContaining("claim journal " + table + "_claims, which is missing")
        .hasMessageContaining("createSchema()");

    store.createSchema();
    assertThat(newStore(false).claimBatch(ClaimRequest.of("w", 1, LEASE)).events()).as("createSchema() made it")
        .extracting(OutboxEvent::id).containsExactly(events.get(0).id());
  }

  @Test
  void aFailedClaimGivesItsConnectionBackAsItWasFound() throws Exception {
    try (Connection real = dataSource.getConnection()) {
      JdbcOutboxStore failing = JdbcOutboxStore.builder().dataSource(withoutReset(real)).table(table)
          .transactionalClaims(true).build();
      TestDatabase.dropOutbox(dataSource, table); // the claim fails

      assertThatThrownBy(() -> failing.claimBatch(ClaimRequest.of("w", 1, LEASE)).events())
          .isInstanceOf(OutboxStoreException.class);

      assertThat(real.getAutoCommit()).as("in auto-commit again, as the application's next use expects").isTrue();
    }
  }

  /**
   * One connection handed out again and again and never reset: what a pool gives that leaves its connections
   * as they were returned.
   */
  private static DataSource withoutReset(Connection connection) {
    Connection kept = (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
        new Class<?>[] {Connection.class}, (proxy, method, args) -> method.getName().equals("close") ? null
            : invoke(method, connection, args));
    return (DataSource) Proxy.newProxyInstance(DataSource.class.getClassLoader(), new Class<?>[] {DataSource.class},
        (proxy, method, args) -> method.getName().equals("getConnection") ? kept : null);
  }

  private static Object invoke(Method method, Object target, Object[] args) throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void isRefusedOnH2() {
    try (HikariDataSource h2 = TestDatabase.H2.dataSource(2, null)) {
      assertThatThrownBy(() -> JdbcOutboxStore.builder().dataSource(h2).transactionalClaims(true).build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("transactionalClaims(true) needs PostgreSQL")
          .hasMessageContaining("remove transactionalClaims(true)");
    }
  }

  private void append(List<OutboxEvent> events) throws Exception {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    }
  }

  /**
   * Ends the sessions holding locks on the test's table, as a killed process's end, and waits until they are
   * gone: a backend lets its row locks go before its advisory locks as it exits.
   */
  private void terminateHoldingSessions() throws Exception {
    List<Integer> pids = new ArrayList<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT pid, pg_terminate_backend(pid) FROM pg_locks WHERE relation = '" + table
            + "'::regclass AND pid <> pg_backend_pid()")) {
      while (rs.next()) {
        pids.add(rs.getInt(1));
      }
    }
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(() -> {
      try (Connection c = dataSource.getConnection(); var ps = c.prepareStatement(
          "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(?)")) {
        ps.setArray(1, c.createArrayOf("integer", pids.toArray()));
        try (var rs = ps.executeQuery()) {
          rs.next();
          return rs.getLong(1) == 0;
        }
      }
    });
  }

  private long claimJournalRows() throws Exception {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT count(*) FROM " + table + "_claims")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static List<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).toList();
  }

  /** Makes {@code store}'s claims look in the claim journal for ended batches again only after {@code delay}. */
  @SuppressWarnings("unchecked")
  private static void lookAtJournalNotBefore(JdbcOutboxStore store, Duration delay) throws Exception {
    java.lang.reflect.Field binding = JdbcOutboxStore.class.getDeclaredField("binding");
    binding.setAccessible(true);
    ((Binding<Statements>) binding.get(store)).get().held().journal.lastCount
        .set(System.nanoTime() + delay.toNanos() - ClaimJournal.COUNT_EVERY_NANOS);
  }
}
