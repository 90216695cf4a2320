package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * In throughput mode a dispatcher's reads (or claims) of a backlog go on after the last event read; what comes
 * before that place waits for the next read from the start. Here a transaction appends an event, then stays
 * open while a backlog appended after it drains: it commits once the dispatchers have read well past its
 * event, whose {@code created_at} puts it before every event of the backlog. It must go out within a poll
 * interval or so, not after the backlog, and every event exactly once. Each test runs without claims (rows
 * kept or deleted), with leases, and with claims held by transactions.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PostgresReadPositionTest {
  private static final int BACKLOG = 3_000;

  private final HikariDataSource dataSource = TestDatabase.POSTGRES.dataSource(10, null);
  private final String table = TestDatabase.uniqueName("outbox_position");

  @AfterEach
  void tearDown() {
    TestDatabase.dropOutbox(dataSource, table);
    dataSource.close();
  }

  /** How the dispatcher takes its batches. */
  enum Mode {
    READ_KEPT(false, false, false), READ_DELETED(false, true, false), LEASED(true, false, false),
    HELD_BY_TRANSACTIONS(true, true, true);

    final boolean claims;
    final boolean deleting;
    final boolean transactional;

    Mode(boolean claims, boolean deleting, boolean transactional) {
      this.claims = claims;
      this.deleting = deleting;
      this.transactional = transactional;
    }
  }

  private JdbcOutboxStore newStore(Mode mode) {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table)
        .deleteOnDispatch(mode.deleting).transactionalClaims(mode.transactional).build();
    store.createSchema();
    return store;
  }

  @ParameterizedTest
  @EnumSource(Mode.class)
  void anEventCommittedLateBeforeTheReadPositionGoesOutWithinAPollInterval(Mode mode) throws SQLException {
    JdbcOutboxStore store = newStore(mode);
    OutboxEvent late = OutboxEvent.builder().aggregate("order", "late").topic("order.created").payload("{}").build();
    List<UUID> published = new CopyOnWriteArrayList<>();
    try (Connection open = dataSource.getConnection()) {
      open.setAutoCommit(false);
      store.append(open, late); // created_at: now, before the backlog's
      TestDatabase.appendOrders(dataSource, store, BACKLOG);
      try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(mode.claims)
          .batchSize(50).workers(2).pollInterval(Duration.ofMillis(100)).dispatchFn(e -> {
            Thread.sleep(1); // a broker that takes 1 ms per event: the backlog lasts a second and more
            published.add(e.id());
          }).build()) {
        d.start();
        await().atMost(Duration.ofSeconds(20)).until(() -> published.size() >= 300);
        open.commit();
        await().atMost(Duration.ofSeconds(40)).until(() -> published.size() == BACKLOG + 1);
        await().atMost(Duration.ofSeconds(10)).until(() -> store.countByStatus()
            .getOrDefault(OutboxStatus.PENDING, 0L) == 0);
      }
    }
    assertThat(published.indexOf(late.id())).as("events published before the one committed late")
        .isBetween(300, 300 + BACKLOG / 2);
    assertThat(published).doesNotHaveDuplicates();
    assertThat(store.countByStatus().getOrDefault(OutboxStatus.DISPATCHED, 0L))
        .isEqualTo(mode.deleting ? 0 : BACKLOG + 1);
  }

  /**
   * A read going on stops at the end of its event's priority, so it comes back short while a lower priority
   * still waits: the worker reads again from the start at once instead of idling a poll interval (here far
   * longer than the whole drain may take). A short claim going on is published, not dropped: it leased (or
   * locked) what it returned.
   */
  @ParameterizedTest
  @EnumSource(Mode.class)
  void aReadThatStopsAtTheEndOfAPriorityGoesOnWithTheNextOneAtOnce(Mode mode) throws SQLException {
    JdbcOutboxStore store = newStore(mode);
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      events.add(OutboxEvent.builder().aggregate("order", "o-" + i).topic("order.created").payload("{}")
          .priority(i < 550 ? 1 : 0).build());
    }
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    }
    List<UUID> published = new CopyOnWriteArrayList<>();
    try (AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).useClaim(mode.claims)
        .batchSize(100).pollInterval(Duration.ofMinutes(5)).dispatchFn(e -> published.add(e.id())).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> published.size() == events.size());
    }
    assertThat(published).doesNotHaveDuplicates()
        .containsExactlyElementsOf(events.stream().map(OutboxEvent::id).toList());
  }
}
