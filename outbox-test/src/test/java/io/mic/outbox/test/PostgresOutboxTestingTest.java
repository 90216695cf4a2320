package io.mic.outbox.test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The kit on the JDBC store, on the PostgreSQL that {@link OutboxTestDatabase} finds. */
class PostgresOutboxTestingTest {
  private final OutboxTestDatabase db = OutboxTestDatabase.postgres();
  private JdbcOutboxStore store;

  @BeforeEach
  void createStore() {
    store = db.newStore();
  }

  @AfterEach
  void dropStore() {
    db.dropStore(store);
  }

  private List<OutboxEvent> appendCommitted(int n) throws Exception {
    List<OutboxEvent> events = new java.util.ArrayList<>();
    for (int i = 0; i < n; i++) {
      events.add(OutboxEvent.builder().aggregate("order", "A" + (i % 3)).topic("order.created")
          .payload("{\"n\":" + i + "}").build());
    }
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    }
    return events;
  }

  @Test
  void theDatabaseIsFoundAndTheStoreIsFresh() {
    assertThat(db.url()).startsWith("jdbc:postgresql:");
    assertThat(store.table()).matches("outbox_t[0-9a-f]{12}");
    assertThat(store.countByStatus().values()).containsOnly(0L);
    assertThatThrownBy(() -> db.dropStore(JdbcOutboxStore.builder().dataSource(db.dataSource()).table("orders")
        .build())).hasMessage("table orders was not named by newTable(): drop it yourself");
  }

  @Test
  void aTableNamePrefixIsTheTeamsAndIsDroppedLikeAnyOther() {
    String table = db.newTable("billing_test_");
    assertThat(table).matches("billing_test_[0-9a-f]{12}");
    JdbcOutboxStore prefixed = JdbcOutboxStore.builder().dataSource(db.dataSource()).table(table).build();
    prefixed.createSchema();
    db.dropStore(table);
    assertThatThrownBy(() -> db.newTable("Billing-")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("e.g. 'billing_test_'");
  }

  @Test
  void dropStoreLeavesNoTableBehind() throws Exception {
    JdbcOutboxStore other = db.newStore();
    appendCommitted(1); // the sequence counter table has rows too
    JdbcOutboxStore.builder().dataSource(db.dataSource()).table(other.table()).transactionalClaims(true).build()
        .createSchema(); // and the claim journal
    db.dropStore(other);
    try (Connection c = db.dataSource().getConnection();
        java.sql.PreparedStatement ps = c.prepareStatement(
            "SELECT table_name FROM information_schema.tables WHERE table_name LIKE ? ORDER BY 1")) {
      ps.setString(1, other.table() + "%");
      List<String> left = new java.util.ArrayList<>();
      try (java.sql.ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          left.add(rs.getString(1));
        }
      }
      assertThat(left).isEmpty();
    }
  }

  @Test
  void orderedClaimingWorkersDrainThePostgresOutboxInAggregateOrder() throws Exception {
    List<OutboxEvent> events = appendCommitted(30);
    RecordingDispatchFn published = new RecordingDispatchFn();
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(published)
        .useClaim(true).preserveAggregateOrder(true).workers(2).pollInterval(Duration.ofMillis(10)).build()) {
      dispatcher.start();
      OutboxTesting.awaitDrained(store, Duration.ofSeconds(20));
    }
    assertThat(published.ids()).hasSize(30);
    for (String aggregate : List.of("A0", "A1", "A2")) {
      assertThat(published.ofAggregate("order", aggregate)).extracting(OutboxEvent::id).containsExactlyElementsOf(
          events.stream().filter(e -> e.aggregateId().equals(aggregate)).map(OutboxEvent::id).toList());
    }
  }

  @Test
  void aRolledBackAppendIsNotInTheOutbox() throws Exception {
    OutboxEvent event = OutboxEvent.builder().aggregate("order", "9").topic("order.created").payload("{}").build();
    try (Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, event);
      c.rollback();
    }
    OutboxTesting.dispatchUntilEmpty(OutboxDispatcher.builder().store(store).dispatchFn(e -> {}).build());
    assertThatThrownBy(() -> OutboxTesting.awaitDispatched(store, Duration.ofMillis(10), event.id()))
        .hasMessage("no such event in the outbox: [" + event.id()
            + "] (was the transaction that appended it committed?)");
  }

  @Test
  void onAStoreThatDeletesDispatchedRowsAnEventNoLongerThereWasDispatched() throws Exception {
    store = JdbcOutboxStore.builder().dataSource(db.dataSource()).table(store.table()).deleteOnDispatch(true).build();
    List<OutboxEvent> events = appendCommitted(3);
    RecordingDispatchFn published = new RecordingDispatchFn();
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(published)
        .pollInterval(Duration.ofMillis(10)).build()) {
      dispatcher.start();
      OutboxTesting.awaitDispatched(store, Duration.ofSeconds(20),
          events.stream().map(OutboxEvent::id).toArray(java.util.UUID[]::new));
    }
    assertThat(published.ids()).hasSize(3);
    assertThat(store.find(events.get(0).id())).isEmpty();
  }
}
