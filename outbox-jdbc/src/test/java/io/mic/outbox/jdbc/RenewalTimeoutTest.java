package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.OutboxEvent;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A lease renewal runs on a background timer shared by every dispatcher of the process: when the database does
 * not answer it (here its row is locked by another transaction; a partition or a frozen server look the same
 * from the client), it must give up once its answer could no longer save the lease, and not wait for ever.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RenewalTimeoutTest {

  @ParameterizedTest(name = "{0}")
  @EnumSource(value = TestDatabase.class, names = {"POSTGRES", "MARIADB"})
  void aRenewalTheDatabaseDoesNotAnswerGivesUpBeforeTheLeaseRunsOut(TestDatabase database) throws Exception {
    String table = TestDatabase.uniqueName("outbox_renew");
    try (HikariDataSource ds = database.dataSource(3, null)) {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(table).build();
      store.createSchema();
      try {
        TestDatabase.appendOrders(ds, store, 1);
        Duration lease = Duration.ofMillis(900);
        List<OutboxEvent> claimed = store.claim(ClaimRequest.of("w1", 10, lease));
        assertThat(claimed).hasSize(1);
        try (Connection locker = ds.getConnection()) {
          locker.setAutoCommit(false);
          try (Statement s = locker.createStatement()) {
            s.execute("SELECT id FROM " + table + " FOR UPDATE");
          }
          long asked = System.nanoTime();
          CompletableFuture<Set<UUID>> renewal = CompletableFuture.supplyAsync(() -> store.renewLeases(claimed, lease));
          Throwable failure = null;
          try {
            renewal.get(10, TimeUnit.SECONDS);
          } catch (ExecutionException e) {
            failure = e.getCause();
          }
          Duration waited = Duration.ofNanos(System.nanoTime() - asked);
          locker.rollback();
          assertThat(failure).as("the renewal that got no answer").isInstanceOf(OutboxStoreException.class);
          assertThat(waited).as("how long the renewal waited (lease %s)", lease).isLessThan(lease.multipliedBy(2));
        }
      } finally {
        TestDatabase.dropOutbox(ds, table);
      }
    }
  }
}
