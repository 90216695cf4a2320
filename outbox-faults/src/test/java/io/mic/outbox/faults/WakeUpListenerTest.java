package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.JdbcTransactions;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The wake-up listener of {@code notifyOnAppend(true)} behind a proxy that black-holes its connection alone
 * (a partition of that socket; the dispatcher's other connections and new ones pass): the listener must notice
 * that its connection no longer answers and replace it, so commit-to-publish comes back from the poll
 * interval to the speed of a notification within a bounded time. The URL has no socket timeout, as users'
 * URLs usually have none.
 */
class WakeUpListenerTest {
  /** Long enough that a publication found by a poll is told apart from one woken by a notification. */
  private static final Duration POLL = Duration.ofSeconds(2);
  private static final Duration NOTIFY_SPEED = Duration.ofMillis(400);
  /** How soon a black-holed listener must be replaced and wake-ups be back. */
  private static final Duration RECOVERY_BOUND = Duration.ofSeconds(15);

  private final Map<UUID, Long> publishedAt = new ConcurrentHashMap<>();

  @Tag("fast")
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void blackHoledListenerIsReplaced() throws Exception {
    PrivatePostgres postgres = Servers.postgres();
    String table = "w_" + UUID.randomUUID().toString().substring(0, 8);
    try (TcpProxy proxy = new TcpProxy(postgres.port()); HikariDataSource pool = pool(postgres, proxy)) {
      proxy.watch("LISTEN");
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(pool).table(table).notifyOnAppend(true).build();
      store.createSchema();
      try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store)
          .dispatchFn(e -> publishedAt.put(e.id(), System.nanoTime())).pollInterval(POLL).build()) {
        dispatcher.start();
        Awaitility.await().atMost(Duration.ofSeconds(30)).until(() -> proxy.connectionsThatSent("LISTEN") == 1);
        assertThat(latency(store, pool)).as("woken by a notification").isLessThan(NOTIFY_SPEED);

        assertThat(proxy.blackholeConnectionsThatSent("LISTEN")).as("the listener's connection held").isEqualTo(1);
        long cut = System.nanoTime();
        int fastInARow = 0;
        Duration slowest = Duration.ZERO;
        while (fastInARow < 3) {
          Duration latency = latency(store, pool);
          slowest = latency.compareTo(slowest) > 0 ? latency : slowest;
          fastInARow = latency.compareTo(NOTIFY_SPEED) < 0 ? fastInARow + 1 : 0;
          assertThat(Duration.ofNanos(System.nanoTime() - cut)).as("wake-ups back after the listener's connection"
              + " was black-holed").isLessThan(RECOVERY_BOUND.plus(POLL.multipliedBy(3)));
        }
        Duration back = Duration.ofNanos(System.nanoTime() - cut);
        System.out.printf("listener black-holed: commit-to-publish up to %d ms (poll %s) until wake-ups were back,"
            + " %.1f s after the cut%n", slowest.toMillis(), POLL, back.toMillis() / 1000.0);
        assertThat(proxy.connectionsThatSent("LISTEN")).as("a new listening connection").isEqualTo(2);
        assertThat(back).as("wake-ups back").isLessThan(RECOVERY_BOUND.plus(POLL.multipliedBy(3)));
        proxy.heal();
      }
    } finally {
      try (java.sql.Connection c = postgres.admin(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table);
      }
    }
  }

  /** Appends one event and waits for its publication: the time from its commit to the publication. */
  private Duration latency(JdbcOutboxStore store, HikariDataSource pool) {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
    JdbcTransactions.useTransaction(pool, c -> store.append(c, e));
    long committed = System.nanoTime();
    Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(5))
        .until(() -> publishedAt.containsKey(e.id()));
    return Duration.ofNanos(publishedAt.get(e.id()) - committed);
  }

  private static HikariDataSource pool(PrivatePostgres postgres, TcpProxy proxy) {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(postgres.appUrl(proxy.port(), "faults-listener").replace("&socketTimeout=10", ""));
    config.setMaximumPoolSize(4);
    config.setConnectionTimeout(5_000);
    return new HikariDataSource(config);
  }
}
