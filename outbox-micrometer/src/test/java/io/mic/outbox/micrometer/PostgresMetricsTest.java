package io.mic.outbox.micrometer;

import static io.mic.outbox.OutboxStatus.DISPATCHED;
import static io.mic.outbox.OutboxStatus.DLQ;
import static io.mic.outbox.OutboxStatus.PENDING;
import static io.mic.outbox.OutboxStatus.PROCESSING;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MockClock;
import io.micrometer.core.instrument.simple.SimpleConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHealth;
import io.mic.outbox.OutboxListeners;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.test.OutboxTestDatabase;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The binding and the health summary over the real JDBC store on PostgreSQL. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresMetricsTest {
  private static final OutboxTestDatabase DB = OutboxTestDatabase.postgres();

  private static final Duration REFRESH = MicrometerOutboxMetrics.DEFAULT_GAUGE_REFRESH;

  private final MockClock meterClock = new MockClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry(SimpleConfig.DEFAULT, meterClock);
  private final Meters meters = new Meters(registry);
  private String table;
  private JdbcOutboxStore store;
  private CountingStore counting;
  private MicrometerOutboxMetrics metrics;

  @BeforeEach
  void createTable() {
    store = DB.newStore();
    table = store.table();
    counting = new CountingStore(store);
    metrics = MicrometerOutboxMetrics.builder().registry(registry).store(counting).build();
  }

  @AfterEach
  void dropTable() {
    if (metrics != null) {
      metrics.close();
    }
    if (store != null) {
      DB.dropStore(store);
    }
  }

  private static OutboxEvent event(String topic, String aggregateId) {
    return OutboxEvent.builder().aggregate("customer", aggregateId).topic(topic).payload("{\"card\":\"4111\"}")
        .build();
  }

  /** Appends like an application does: in its own transaction, committed. */
  private void append(List<OutboxEvent> events) throws SQLException {
    try (Connection c = DB.dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    }
  }

  @Test
  void countersAndGaugesAfterDispatchRetryAndDeadLetter() throws Exception {
    OutboxHealth health = OutboxHealth.builder().store(store).build();
    append(List.of(event("order.created", "c-1"), event("order.created", "c-2"), event("order.created", "c-3"),
        event("payment.failed", "c-4")));
    // a 1 ms backoff makes the retry due at once, so the second pass finds it without waiting
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).maxAttempts(2)
        .retryBackoff(Duration.ofMillis(1), Duration.ofMillis(1))
        .listener(OutboxListeners.of(metrics.listener(), health))
        .dispatchFn(e -> {
          if (e.topic().equals("payment.failed")) {
            throw new IllegalArgumentException("rejected by the broker");
          }
        })
        .build();

    assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(4, 3, 1, 0, 0, 0));
    assertThat(meters.status(PENDING)).isEqualTo(1);
    assertThat(meters.status(DISPATCHED)).isEqualTo(3);

    Thread.sleep(20);
    append(List.of(event("payment.failed", "c-5")));
    assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(2, 0, 1, 1, 0, 0));
    // the remaining retry is aged by hand so the age gauge has a value worth checking
    DB.execute("UPDATE " + table + " SET created_at = created_at - INTERVAL '1 hour'"
        + " WHERE status = 'PENDING'");

    meterClock.add(REFRESH);
    assertThat(meters.status(PENDING)).isEqualTo(1);
    assertThat(meters.status(PROCESSING)).isZero();
    assertThat(meters.status(DISPATCHED)).isEqualTo(3);
    assertThat(meters.status(DLQ)).isEqualTo(1);
    assertThat(meters.oldestPendingAgeSeconds()).isBetween(3600.0, 3630.0);

    assertThat(meters.count("mic.outbox.events.dispatched", "order.created")).isEqualTo(3);
    assertThat(meters.count("mic.outbox.events.dispatched", "payment.failed")).isZero();
    assertThat(meters.count("mic.outbox.events.retried", "payment.failed")).isEqualTo(2);
    assertThat(meters.count("mic.outbox.events.dead.lettered", "payment.failed")).isEqualTo(1);
    assertThat(meters.total("mic.outbox.events.lease.lost")).isZero();
    assertThat(meters.total("mic.outbox.events.released")).isZero();
    assertThat(meters.timerCount("mic.outbox.publish", "order.created")).isEqualTo(3);
    assertThat(meters.timerCount("mic.outbox.batch", null)).isEqualTo(2);
    meters.assertNoTagBeyond(Set.of("topic", "status", "reason"),
        Set.of("customer", "c-1", "c-2", "c-3", "c-4", "c-5", "{\"card\":\"4111\"}"));

    OutboxHealth.Snapshot s = health.snapshot();
    assertThat(s.pending()).isEqualTo(1);
    assertThat(s.dlq()).isEqualTo(1);
    assertThat(s.lag()).hasValueSatisfying(lag -> assertThat(lag).isBetween(Duration.ofHours(1),
        Duration.ofHours(1).plusSeconds(30)));
    assertThat(s.isHealthy(Duration.ofMinutes(90))).isTrue();
    assertThat(s.isHealthy(Duration.ofMinutes(30))).isFalse();
    assertThat(s.lastSuccessfulDispatch()).isPresent();
    assertThat(s.dispatched()).isEqualTo(3);
    assertThat(s.retried()).isEqualTo(2);
    assertThat(s.deadLettered()).isEqualTo(1);
  }

  @Test
  void scrapesQueryTheDatabaseOncePerRefreshInterval() throws Exception {
    append(List.of(event("order.created", "c-1")));
    for (int i = 0; i < 25; i++) {
      meters.scrape();
    }
    assertThat(meters.status(PENDING)).isEqualTo(1);
    assertThat(counting.countByStatus.get()).isEqualTo(1);
    assertThat(counting.oldestPendingAge.get()).isEqualTo(1);

    meterClock.add(REFRESH);
    for (int i = 0; i < 25; i++) {
      meters.scrape();
    }
    assertThat(counting.countByStatus.get()).isEqualTo(2);
    assertThat(counting.oldestPendingAge.get()).isEqualTo(2);
  }

  @Test
  void theDeadTupleGaugeCountsTheRowVersionsVacuumHasNotRemoved() throws Exception {
    DB.execute("ALTER TABLE " + table + " SET (autovacuum_enabled = false)"); // nothing removes them meanwhile
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      events.add(event("order.created", "c-" + i));
    }
    append(events);
    DB.execute("DELETE FROM " + table);
    // the statistics see a transaction's dead rows within about a second of its commit
    await().atMost(Duration.ofSeconds(20)).until(() -> {
      meterClock.add(REFRESH);
      return meters.deadTuples() == 300;
    });
    DB.execute("VACUUM " + table);
    await().atMost(Duration.ofSeconds(20)).until(() -> {
      meterClock.add(REFRESH);
      return meters.deadTuples() == 0;
    });
  }

  @Test
  void asyncClaimingWorkersAreCountedExactly() throws Exception {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      events.add(event(i % 2 == 0 ? "order.created" : "order.shipped", "c-" + i));
    }
    append(events);
    try (AsyncOutboxDispatcher async = AsyncOutboxDispatcher.builder().store(store).dispatchFn(e -> {})
        .useClaim(true).workers(3).batchSize(5).pollInterval(Duration.ofMillis(20))
        .listener(metrics.listener()).build()) {
      async.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> meters.total("mic.outbox.events.dispatched") == 60);
    }
    assertThat(meters.count("mic.outbox.events.dispatched", "order.created")).isEqualTo(30);
    assertThat(meters.count("mic.outbox.events.dispatched", "order.shipped")).isEqualTo(30);
    assertThat(meters.total("mic.outbox.events.lease.lost")).isZero();
    assertThat(meters.status(DISPATCHED)).isEqualTo(60);
    assertThat(meters.status(PENDING)).isZero();
    assertThat(meters.oldestPendingAgeSeconds()).isZero();
  }
}
