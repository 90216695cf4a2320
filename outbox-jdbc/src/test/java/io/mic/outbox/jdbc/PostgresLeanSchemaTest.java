package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The lean schema on PostgreSQL: a table with the indexes of the previous schema, holding dispatched and
 * pending events, is upgraded by createSchema(); ordered dispatch, retention and the archive read work
 * on it afterwards, and a second createSchema() changes nothing.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresLeanSchemaTest {
  private HikariDataSource dataSource;
  private final List<String> tables = new ArrayList<>();

  @BeforeAll
  void connect() {
    dataSource = TestDatabase.POSTGRES.dataSource(4, null);
  }

  @AfterAll
  void disconnect() {
    dataSource.close();
  }

  @AfterEach
  void dropTables() {
    tables.forEach(t -> TestDatabase.dropOutbox(dataSource, t));
    tables.clear();
  }

  @Test
  void createSchemaUpgradesTheIndexesOfAnOldTableWithItsRows() throws SQLException {
    String table = TestDatabase.uniqueName("outbox_lean");
    tables.add(table);
    OldSchemas.BEFORE_LEAN.create(dataSource, table);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    List<OutboxEvent> first = events(10, 20); // 10 aggregates x 20 events
    append(store, first);
    List<String> published = new ArrayList<>();
    OutboxDispatcher ordered = OutboxDispatcher.builder().store(store).useClaim(true).preserveAggregateOrder(true)
        .batchSize(50).dispatchFn(e -> published.add(e.aggregateId() + "#" + e.sequence())).build();
    ordered.dispatchOnce(); // half dispatched before the upgrade, the rest pending
    ordered.dispatchOnce();
    assertThat(published).hasSize(100);
    assertThat(OldSchemas.indexes(dataSource, table))
        .contains(table + "_aggregate_idx", table + "_dispatched_idx");

    store.createSchema();

    assertThat(OldSchemas.indexes(dataSource, table)).containsExactlyInAnyOrder(
        table + "_pkey", table + "_claim_idx", table + "_head_idx", table + "_dlq_idx", table + "_held_idx",
        table + "_parked_idx");
    store.createSchema(); // nothing left to do
    assertThat(OldSchemas.indexes(dataSource, table)).hasSize(6);

    List<OutboxEvent> second = events(10, 5);
    append(store, second);
    int n;
    while ((n = ordered.dispatchOnce().dispatched()) > 0) {
      assertThat(n).isPositive();
    }
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 250L)
        .containsEntry(OutboxStatus.PENDING, 0L).containsEntry(OutboxStatus.PROCESSING, 0L);
    Map<String, Long> last = new HashMap<>();
    for (String p : published) {
      String aggregate = p.substring(0, p.indexOf('#'));
      long seq = Long.parseLong(p.substring(p.indexOf('#') + 1));
      assertThat(seq).as("order of %s", aggregate).isEqualTo(last.getOrDefault(aggregate, 0L) + 1);
      last.put(aggregate, seq);
    }

    // retention walks the primary key: oldest (first appended) first, in bounded batches
    List<OutboxEvent> oldest = DispatchedEvents.of(store).oldest(Duration.ZERO, 7);
    assertThat(oldest).extracting(OutboxEvent::id)
        .containsExactlyElementsOf(first.stream().map(OutboxEvent::id).sorted().limit(7).toList());
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).batchSize(60).build();
    assertThat(maintenance.purgeDispatchedBatch(0)).isEqualTo(60);
    assertThat(maintenance.purgeDispatchedOlderThan(Duration.ZERO)).isEqualTo(190);
    assertThat(store.countByStatus().values().stream().mapToLong(Long::longValue).sum()).isZero();
  }

  @Test
  void theUpgradeScriptNamesTheTableAndItsIndexesWithTheSchema() {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table("billing.events").build();
    assertThat(store.upgradeIndexesDdl())
        .contains("CREATE INDEX IF NOT EXISTS \"events_head_idx\"\n    ON \"billing\".\"events\"")
        .contains("DROP INDEX IF EXISTS \"billing\".\"events_aggregate_idx\"")
        .contains("DROP INDEX IF EXISTS \"billing\".\"events_dispatched_idx\"");
  }

  private static List<OutboxEvent> events(int aggregates, int perAggregate) {
    List<OutboxEvent> list = new ArrayList<>();
    for (int i = 0; i < perAggregate; i++) {
      for (int a = 0; a < aggregates; a++) {
        list.add(OutboxEvent.builder().aggregate("order", "o-" + a).topic("order.changed")
            .payload("{\"n\":" + i + "}").build());
      }
    }
    return list;
  }

  private void append(JdbcOutboxStore store, List<OutboxEvent> events) throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    }
  }
}
