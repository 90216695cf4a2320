package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.DuplicateEventException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.PostgresPartitions.Partition;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A plain outbox table holding rows becomes a partitioned one when a store built with partitionInterval calls
 * createSchema(): its rows stay, as the {@code past} partition, and every state and order is kept.
 */
class PostgresPartitionUpgradeTest {
  private HikariDataSource dataSource;
  private String table;

  @BeforeEach
  void connect() {
    dataSource = TestDatabase.POSTGRES.dataSource(4, null);
    table = TestDatabase.uniqueName("outbox_pu");
  }

  @AfterEach
  void drop() {
    TestDatabase.dropOutbox(dataSource, table);
    dataSource.close();
  }

  @Test
  void aPlainTableWithRowsIsConvertedAndKeepsThem() throws SQLException {
    JdbcOutboxStore plain = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    plain.createSchema();
    List<OutboxEvent> appended = TestDatabase.appendOrders(dataSource, plain, 50);
    List<OutboxEvent> claimed = plain.claim(new ClaimRequest("w", 21, Duration.ofMinutes(1), false, 1, Set.of()));
    assertThat(plain.markDispatched(claimed.subList(0, 20))).hasSize(20);
    assertThat(plain.markDead(claimed.get(20), "poison")).isTrue();
    Map<OutboxStatus, Long> before = plain.countByStatus();

    JdbcOutboxStore partitioned = JdbcOutboxStore.builder().dataSource(dataSource).table(table)
        .partitionInterval(Duration.ofHours(1)).build();
    partitioned.createSchema();

    PostgresPartitions partitions = new PostgresPartitions(partitioned.access(), Duration.ofHours(1));
    assertThat(partitions.kind()).isEqualTo("p");
    List<Partition> list = partitions.list();
    assertThat(list.get(0).name()).isEqualTo(table + "_past");
    assertThat(list).hasSize(1 + 1 + PostgresPartitions.AHEAD); // the current hour is the old table's
    assertThat(partitioned.countByStatus()).isEqualTo(before).containsEntry(OutboxStatus.PENDING, 29L);
    for (OutboxEvent e : appended) {
      assertThat(partitioned.find(e.id())).as("event %s", e.id()).get().extracting(OutboxEvent::sequence)
          .isEqualTo(1L);
    }
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      assertThatThrownBy(() -> partitioned.append(c, appended.get(0))).isInstanceOf(DuplicateEventException.class);
      c.rollback();
    }
    List<OutboxEvent> next = TestDatabase.appendOrders(dataSource, partitioned, 1);
    List<OutboxEvent> rest = partitioned.claim(new ClaimRequest("w", 100, Duration.ofMinutes(1), false, 1,
        Set.of()));
    assertThat(rest).extracting(OutboxEvent::id).containsExactlyElementsOf(
        java.util.stream.Stream.concat(appended.subList(21, 50).stream(), next.stream()).map(OutboxEvent::id)
            .toList());
    assertThat(partitioned.find(next.get(0).id()).orElseThrow().sequence()).as("o-0 goes on from its counter")
        .isEqualTo(2L);

    partitioned.createSchema(); // found: nothing runs again
    assertThat(partitions.list()).isEqualTo(list);
  }
}
