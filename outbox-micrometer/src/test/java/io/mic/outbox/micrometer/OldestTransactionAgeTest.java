package io.mic.outbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.MockClock;
import io.micrometer.core.instrument.simple.SimpleConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHealth;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.test.OutboxTestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A transaction left open on another connection holds back the cleanup of the outbox's dead rows: the
 * store, the health summary and the gauge all show its age while it runs, and nothing once it commits.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class OldestTransactionAgeTest {
  private static final Duration REFRESH = MicrometerOutboxMetrics.DEFAULT_GAUGE_REFRESH;
  private static final Duration OPEN_FOR = Duration.ofMillis(300);

  private final MockClock meterClock = new MockClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry(SimpleConfig.DEFAULT, meterClock);
  private final Meters meters = new Meters(registry);

  @Test
  void onPostgres() throws Exception {
    showsATransactionLeftOpen(OutboxTestDatabase.postgres());
  }

  @Test
  void onMariaDb() throws Exception {
    showsATransactionLeftOpen(OutboxTestDatabase.mariadb());
  }

  private void showsATransactionLeftOpen(OutboxTestDatabase db) throws Exception {
    JdbcOutboxStore store = db.newStore();
    OutboxHealth health = OutboxHealth.builder().store(store).build();
    try (MicrometerOutboxMetrics metrics = MicrometerOutboxMetrics.builder().registry(registry).store(store).build()) {
      await().atMost(Duration.ofSeconds(20)).until(() -> store.oldestTransactionAge().isEmpty());
      assertThat(health.snapshot().oldestTransactionAge()).isEmpty();
      assertThat(meters.oldestTransactionAgeSeconds()).isZero();

      try (Connection c = db.dataSource().getConnection()) {
        c.setAutoCommit(false);
        Instant began = Instant.now();
        store.append(c, event()); // a writing transaction, then idle
        await().atMost(Duration.ofSeconds(20)).until(() -> store.oldestTransactionAge()
            .filter(age -> age.compareTo(OPEN_FOR) >= 0).isPresent());
        Duration age = store.oldestTransactionAge().orElseThrow();
        // MariaDB's trx_started has whole seconds, taken from the kernel's coarse clock, which lags by up to a
        // tick: the age may read up to a second and a tick long
        assertThat(age).isBetween(OPEN_FOR, Duration.between(began, Instant.now()).plusMillis(1_050));
        assertThat(health.snapshot().oldestTransactionAge())
            .hasValueSatisfying(a -> assertThat(a).isGreaterThanOrEqualTo(age));
        meterClock.add(REFRESH);
        assertThat(meters.oldestTransactionAgeSeconds()).isGreaterThanOrEqualTo(seconds(age));
        c.commit();
      }

      await().atMost(Duration.ofSeconds(20)).until(() -> store.oldestTransactionAge().isEmpty());
      await().atMost(Duration.ofSeconds(20)).until(() -> health.snapshot().oldestTransactionAge().isEmpty());
      await().atMost(Duration.ofSeconds(20)).until(() -> {
        meterClock.add(REFRESH);
        return meters.oldestTransactionAgeSeconds() == 0.0;
      });
    } finally {
      db.dropStore(store);
    }
  }

  private static double seconds(Duration d) {
    return d.getSeconds() + d.getNano() / 1e9;
  }

  private static OutboxEvent event() {
    return OutboxEvent.builder().aggregate("order", "o-1").topic("order.created").payload("{}").build();
  }
}
