package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.HeldAggregate;
import io.mic.outbox.OutboxEvent;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Three dispatchers, each with its own pool and store on one PostgreSQL table, holding aggregates behind their
 * dead events: nothing of a held aggregate goes out while the others flow; a redrive publishes the dead event,
 * then the waiting ones in order; a purge lets the waiting ones go on in order.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class PostgresHeldAggregatesTest {
  private static final int AGGREGATES = 12;
  private static final int EVENTS = 8;

  private final List<HikariDataSource> pools = new ArrayList<>();
  private final List<AsyncOutboxDispatcher> dispatchers = new ArrayList<>();
  private final List<OutboxEvent> published = new CopyOnWriteArrayList<>();
  private final Set<UUID> poison = ConcurrentHashMap.newKeySet();
  private String table;
  private JdbcOutboxStore operator;
  private OutboxDeadLetters deadLetters;

  @BeforeEach
  void setUp() {
    table = TestDatabase.uniqueName("outbox_held");
    operator = JdbcOutboxStore.builder().dataSource(pool()).table(table).build();
    operator.createSchema();
    deadLetters = OutboxDeadLetters.builder().store(operator).build();
    for (String name : List.of("node-a", "node-b", "node-c")) {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(pool()).table(table).build();
      AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().name(name).store(store).useClaim(true)
          .preserveAggregateOrder(true).holdAggregateOnDeadLetter(true).aggregateRun(3).batchSize(10).workers(2)
          .maxAttempts(2).retryBackoff(Duration.ofMillis(20), Duration.ofMillis(50))
          .pollInterval(Duration.ofMillis(50)).dispatchFn(e -> {
            if (poison.contains(e.id())) {
              throw new IllegalArgumentException("rejected");
            }
            published.add(e);
          }).build();
      dispatchers.add(d);
    }
  }

  @AfterEach
  void tearDown() {
    dispatchers.forEach(AsyncOutboxDispatcher::close);
    TestDatabase.dropOutbox(pools.get(0), table);
    pools.forEach(HikariDataSource::close);
  }

  private HikariDataSource pool() {
    HikariDataSource ds = TestDatabase.POSTGRES.dataSource(3, null);
    pools.add(ds);
    return ds;
  }

  private List<OutboxEvent> append(String aggregateId, int count) {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      events.add(OutboxEvent.builder().aggregate("order", aggregateId).topic("order.changed")
          .payload("{\"n\":" + i + "}").build());
    }
    try (Connection c = pools.get(0).getConnection()) {
      c.setAutoCommit(false);
      operator.append(c, events);
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return events;
  }

  private List<UUID> publishedOf(String aggregateId) {
    return published.stream().filter(e -> e.aggregateId().equals(aggregateId)).map(OutboxEvent::id).toList();
  }

  private static List<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).toList();
  }

  @Test
  void aHeldAggregateWaitsWhileOthersFlowThenARedriveAndAPurgeReleaseItInOrder() {
    Map<String, List<OutboxEvent>> appended = new LinkedHashMap<>();
    for (int a = 0; a < AGGREGATES; a++) {
      appended.put("o-" + a, append("o-" + a, EVENTS));
    }
    OutboxEvent redriven = appended.get("o-3").get(2);
    OutboxEvent purged = appended.get("o-7").get(0);
    poison.addAll(List.of(redriven.id(), purged.id()));
    dispatchers.forEach(AsyncOutboxDispatcher::start);

    await().atMost(Duration.ofSeconds(60)).until(() -> deadLetters.heldAggregates().size() == 2);
    // the others flow, also what is appended while the two are held (a worker may still hold the last run of an
    // older aggregate when the new one is done: wait for them all)
    List<OutboxEvent> later = append("o-late", EVENTS);
    await().atMost(Duration.ofSeconds(60)).until(() -> publishedOf("o-late").size() == EVENTS
        && appended.keySet().stream().filter(a -> !a.equals("o-3") && !a.equals("o-7"))
            .allMatch(a -> publishedOf(a).size() >= EVENTS));
    for (String aggregate : appended.keySet()) {
      if (!aggregate.equals("o-3") && !aggregate.equals("o-7")) {
        assertThat(publishedOf(aggregate)).as(aggregate).isEqualTo(ids(appended.get(aggregate)));
      }
    }
    assertThat(publishedOf("o-late")).isEqualTo(ids(later));
    assertThat(publishedOf("o-3")).as("o-3 up to its dead event").isEqualTo(ids(appended.get("o-3").subList(0, 2)));
    assertThat(publishedOf("o-7")).as("o-7 behind its dead first event").isEmpty();
    assertThat(deadLetters.heldAggregates()).containsExactlyInAnyOrder(
        new HeldAggregate("order", "o-3", redriven.id(), EVENTS - 3),
        new HeldAggregate("order", "o-7", purged.id(), EVENTS - 1));

    poison.clear(); // the cause is fixed
    assertThat(deadLetters.redrive(redriven.id())).isTrue();
    await().atMost(Duration.ofSeconds(60)).until(() -> publishedOf("o-3").size() == EVENTS);
    assertThat(publishedOf("o-3")).as("the dead event first, then the waiting ones in order")
        .isEqualTo(ids(appended.get("o-3")));
    assertThat(publishedOf("o-7")).as("still held").isEmpty();

    assertThat(deadLetters.purgeDeadLetters(DeadLetterQuery.builder().aggregate("order", "o-7").build())).isEqualTo(1);
    await().atMost(Duration.ofSeconds(60)).until(() -> publishedOf("o-7").size() == EVENTS - 1);
    assertThat(publishedOf("o-7")).isEqualTo(ids(appended.get("o-7").subList(1, EVENTS)));
    assertThat(deadLetters.heldAggregates()).isEmpty();
    assertThat(published).hasSize(AGGREGATES * EVENTS - 1 + EVENTS);
  }
}
