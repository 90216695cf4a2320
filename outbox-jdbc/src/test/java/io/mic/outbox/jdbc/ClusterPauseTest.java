package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PauseState;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A pause written to {@code outbox_control} by a third party holds two dispatchers, each with its own pool
 * and store on one table, within one poll interval; the paused events stay, and the resume releases them.
 * One small subclass per database.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
abstract class ClusterPauseTest {
  private static final Duration POLL = Duration.ofMillis(100);

  private final List<HikariDataSource> pools = new ArrayList<>();
  private final List<AsyncOutboxDispatcher> dispatchers = new ArrayList<>();
  private final Set<UUID> published = ConcurrentHashMap.newKeySet();
  private final List<UUID> publishOrder = new CopyOnWriteArrayList<>();
  private String table;
  private JdbcOutboxStore operatorStore;
  private OutboxControl control;

  protected abstract TestDatabase database();

  @BeforeEach
  void setUp() {
    table = TestDatabase.uniqueName("outbox_pause");
    operatorStore = JdbcOutboxStore.builder().dataSource(pool()).table(table).build();
    operatorStore.createSchema();
    control = OutboxControl.builder().store(operatorStore).build();
    for (String name : List.of("node-a", "node-b")) {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(pool()).table(table).build();
      AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().name(name).store(store).useClaim(true)
          .preserveAggregateOrder(true).workers(2).pollInterval(POLL).dispatchFn(e -> {
            published.add(e.id());
            publishOrder.add(e.id());
          }).build();
      dispatchers.add(d);
      d.start();
    }
  }

  @AfterEach
  void tearDown() {
    dispatchers.forEach(AsyncOutboxDispatcher::close);
    try (Connection c = pools.get(0).getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + controlTable());
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    TestDatabase.dropOutbox(pools.get(0), table);
    pools.forEach(HikariDataSource::close);
  }

  private String controlTable() {
    char q = operatorStore.dialect().identifierQuote();
    return q + table + "_control" + q;
  }

  private HikariDataSource pool() {
    HikariDataSource ds = database().dataSource(3, null);
    pools.add(ds);
    return ds;
  }

  private OutboxEvent append(String topic, String aggregateId) {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload("{}").build();
    try (Connection c = pools.get(0).getConnection()) {
      c.setAutoCommit(false);
      operatorStore.append(c, e);
      c.commit();
    } catch (SQLException ex) {
      throw new IllegalStateException(ex);
    }
    return e;
  }

  private OutboxEvent stored(OutboxEvent e) {
    return operatorStore.find(e.id()).orElseThrow();
  }

  @Test
  void aPauseOfEveryTopicStopsEveryDispatcherWithinOnePollAndTheResumeReleasesTheEvents() throws Exception {
    List<OutboxEvent> appended = new CopyOnWriteArrayList<>();
    AtomicBoolean producing = new AtomicBoolean(true);
    Thread producer = new Thread(() -> {
      int i = 0;
      while (producing.get()) {
        appended.add(append("order.created", "p" + (i++ % 7)));
        try {
          Thread.sleep(5); // paces the producer, so events keep arriving across the pause
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "producer");
    producer.start();
    await().atMost(Duration.ofSeconds(10)).until(() -> published.size() >= 20);

    assertThat(control.pause(null, "consumer v2 deploy, ask #payments")).isTrue();
    assertThat(control.pause(null, "a second reason")).as("already paused").isFalse();
    OutboxControl.Pause pause = control.pauses().get(0);
    assertThat(pause.topic()).isNull();
    assertThat(pause.allTopics()).isTrue();
    assertThat(pause.reason()).isEqualTo("consumer v2 deploy, ask #payments");
    assertThat(control.state()).isEqualTo(PauseState.ALL);
    Instant pausedAt = pause.pausedAt();

    // events keep arriving for a while after the pause; none that came one poll interval later is claimed
    int atPause = appended.size();
    await().atMost(Duration.ofSeconds(10)).until(() -> appended.size() >= atPause + 100);
    producing.set(false);
    producer.join();
    Instant horizon = pausedAt.plus(POLL);
    List<OutboxEvent> late = appended.stream().map(this::stored).filter(e -> e.createdAt().isAfter(horizon)).toList();
    assertThat(late).hasSizeGreaterThanOrEqualTo(50);
    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2))
        .until(() -> late.stream().noneMatch(e -> published.contains(e.id())));
    for (OutboxEvent e : late) {
      OutboxEvent now = stored(e);
      assertThat(now.status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(now.attempts()).isZero();
    }

    assertThat(control.resume(null)).isTrue();
    assertThat(control.resume(null)).isFalse();
    assertThat(control.pauses()).isEmpty();
    await().atMost(Duration.ofSeconds(20)).until(() ->
        operatorStore.countByStatus().get(OutboxStatus.DISPATCHED) == appended.size());
    assertThat(published).containsExactlyInAnyOrderElementsOf(appended.stream().map(OutboxEvent::id).toList());
    assertThat(operatorStore.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, (long) appended.size())
        .containsEntry(OutboxStatus.PENDING, 0L).containsEntry(OutboxStatus.PROCESSING, 0L);
  }

  @Test
  void aPausedTopicWaitsAndItsHeadStillBlocksItsAggregate() {
    assertThat(control.pause("billing.issued", "billing schema change")).isTrue();
    assertThat(control.state()).isEqualTo(PauseState.topics(Set.of("billing.issued")));
    // The contract: a pause holds for every dispatcher within one poll interval (a poll that read the
    // pauses just before the pause committed may still claim); the events come after that interval.
    long pausedAt = System.nanoTime();
    await().pollDelay(POLL.multipliedBy(2)).atMost(Duration.ofSeconds(5))
        .until(() -> System.nanoTime() - pausedAt >= POLL.multipliedBy(2).toNanos());
    OutboxEvent billingHead = append("billing.issued", "42");
    OutboxEvent orderBehind = append("order.created", "42");
    OutboxEvent otherOrder = append("order.created", "43");

    await().atMost(Duration.ofSeconds(10)).until(() -> published.contains(otherOrder.id()));
    await().during(Duration.ofMillis(3 * POLL.toMillis())).atMost(Duration.ofSeconds(2))
        .until(() -> !published.contains(billingHead.id()) && !published.contains(orderBehind.id()));
    assertThat(stored(billingHead).status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(stored(billingHead).attempts()).isZero();
    assertThat(stored(orderBehind).status()).isEqualTo(OutboxStatus.PENDING);

    assertThat(control.resume(null)).as("a pause of every topic is not a topic's").isFalse();
    assertThat(control.resume("billing.issued")).isTrue();
    await().atMost(Duration.ofSeconds(10)).until(() -> published.contains(orderBehind.id()));
    assertThat(publishOrder.indexOf(billingHead.id())).isLessThan(publishOrder.indexOf(orderBehind.id()));
  }

  @Test
  void badPausesAreRefusedNamingTheFix() {
    assertThatThrownBy(() -> control.pause("order.created", " "))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("reason is required: say why the outbox is paused and who to ask, in at most 1000"
            + " characters, was 1 characters");
    assertThatThrownBy(() -> control.pause(" order", "why"))
        .hasMessage("topic ' order' is invalid: give the topic of the events to pause, at most 255 characters,"
            + " or no topic to pause every topic");
    assertThat(control.pauses()).isEmpty();
  }

  /**
   * A pause matches one topic exactly. A pattern, or any text no event can carry as its topic, would be
   * stored, listed and logged as a pause, and hold nothing: the operator must hear so at once.
   */
  @Test
  void aTopicNoEventCanCarryIsRefusedRatherThanStoredAsAPauseOfNothing() {
    assertThatThrownBy(() -> control.pause("billing.*", "billing consumer v2 deploy"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("topic 'billing.*' is invalid: use letters, digits, '_', '-' and '.' between non-empty parts"
            + " (no wildcards '*' or '>', no spaces, no leading, trailing or double dots), e.g. 'order.created';"
            + " a pause holds the one topic it names: give the topic of the events to pause, or no topic to"
            + " pause every topic");
    for (String topic : List.of("billing.>", "billing issued", "billing..issued", "billing.issued.")) {
      assertThatThrownBy(() -> control.pause(topic, "deploy")).as(topic)
          .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("topic '" + topic + "' is invalid");
    }
    assertThat(control.pauses()).isEmpty();
    assertThat(control.state()).isEqualTo(PauseState.NONE);

    assertThat(control.pause("billing.issued", "billing consumer v2 deploy")).isTrue();
    assertThat(control.state()).isEqualTo(PauseState.topics(Set.of("billing.issued")));
    assertThat(control.resume("billing.issued")).isTrue();
  }

  @Test
  void anOutboxWithoutControlTableIsNotPausedAndCreateSchemaAddsTheTable() throws Exception {
    try (Connection c = pools.get(0).getConnection(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE " + controlTable());
    }
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(pools.get(0)).table(table).build();
    assertThat(store.pauseState()).isEqualTo(PauseState.NONE);
    OutboxEvent e = append("order.created", "1");
    await().atMost(Duration.ofSeconds(10)).until(() -> published.contains(e.id()));
    control.createSchema();
    assertThat(control.pause(null, "after the upgrade")).isTrue();
    assertThat(OutboxControl.builder().store(store).build().state()).isEqualTo(PauseState.ALL);
  }
}
