package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Crash after publication and before the mark (and after the claim, before publication): a real
 * dispatcher process is killed with SIGKILL in the middle of a batch. Nothing may be lost; the events it
 * published come again (at-least-once), bounded by its batch; nothing is taken over before its lease ends.
 */
class CrashWindowTest {
  private static final Duration LEASE = Duration.ofSeconds(3);
  private static HikariDataSource dataSource;

  @BeforeAll
  static void connect() {
    dataSource = TestDatabase.POSTGRES.dataSource(4, null);
  }

  @AfterAll
  static void disconnect() {
    dataSource.close();
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void killedDispatcherLosesNothingAndItsLeaseIsTakenOver(@TempDir Path dir) throws Exception {
    killedDispatcherLosesNothing(dir, b -> b);
  }

  /** The same on a table partitioned by hour (the dispatcher that dies reads it through a store without the option). */
  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void killedDispatcherLosesNothingOnAPartitionedTable(@TempDir Path dir) throws Exception {
    killedDispatcherLosesNothing(dir, b -> b.partitionInterval(Duration.ofHours(1)));
  }

  private void killedDispatcherLosesNothing(Path dir, java.util.function.UnaryOperator<JdbcOutboxStore.Builder> options)
      throws Exception {
    String table = TestDatabase.uniqueName("outbox_crash");
    JdbcOutboxStore store = options.apply(JdbcOutboxStore.builder().dataSource(dataSource).table(table)).build();
    store.createSchema();
    try {
      List<OutboxEvent> events = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        events.add(OutboxEvent.builder().aggregate("order", "o" + i).topic("order.created").payload("{}").build());
      }
      try (Connection c = dataSource.getConnection()) {
        c.setAutoCommit(false);
        store.append(c, events);
        c.commit();
      }

      Set<UUID> publishedByChild = killAfterFivePublications(dir, table, LEASE, "leased");
      assertThat(publishedByChild).hasSizeBetween(5, 19);
      assertThat(store.countByStatus()).as("the dead worker's claim holds until its lease ends")
          .containsEntry(OutboxStatus.PROCESSING, 20L);

      List<UUID> publishedBySurvivor = new ArrayList<>();
      OutboxDispatcher survivor = OutboxDispatcher.builder().store(store).useClaim(true).batchSize(100)
          .dispatchFn(e -> publishedBySurvivor.add(e.id())).build();
      assertThat(survivor.dispatchOnce().isEmpty()).as("nothing is taken over while the lease holds").isTrue();
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> {
        survivor.dispatchOnce(); // takes the dead worker's events over once their lease has run out
        return store.countByStatus().get(OutboxStatus.DISPATCHED) == 20;
      });
      assertThat(publishedBySurvivor).as("every event, none twice by the survivor")
          .containsExactlyInAnyOrderElementsOf(events.stream().map(OutboxEvent::id).toList());
      Set<UUID> duplicates = new HashSet<>(publishedByChild);
      duplicates.retainAll(publishedBySurvivor);
      assertThat(duplicates).as("duplicates are exactly what the dead worker published but did not mark")
          .isEqualTo(publishedByChild);
      for (OutboxEvent e : events) {
        assertThat(store.find(e.id()).orElseThrow().attempts()).as("one attempt per claim").isEqualTo(2);
      }
    } finally {
      TestDatabase.dropOutbox(dataSource, table);
    }
  }

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void killedDispatcherWithTransactionalClaimsGivesItsRowsBackAtOnce(@TempDir Path dir) throws Exception {
    String table = TestDatabase.uniqueName("outbox_crash_tx");
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).transactionalClaims(true)
        .build();
    store.createSchema();
    try {
      List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 20);
      Duration lease = Duration.ofMinutes(5);
      Set<UUID> publishedByChild = killAfterFivePublications(dir, table, lease, "transactional");
      assertThat(publishedByChild).hasSizeBetween(5, 19);

      List<UUID> publishedBySurvivor = new ArrayList<>();
      OutboxDispatcher survivor = OutboxDispatcher.builder().store(store).useClaim(true).batchSize(100)
          .leaseTtl(lease).dispatchFn(e -> publishedBySurvivor.add(e.id())).build();
      // the dead session's transaction ends when the server sees its connection close: long before the lease
      await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> {
        survivor.dispatchOnce();
        return store.countByStatus().getOrDefault(OutboxStatus.DISPATCHED, 0L) == 20;
      });
      assertThat(publishedBySurvivor).as("every event, none twice by the survivor")
          .containsExactlyInAnyOrderElementsOf(events.stream().map(OutboxEvent::id).toList());
      assertThat(publishedBySurvivor).containsAll(publishedByChild);
      for (OutboxEvent e : events) {
        assertThat(store.find(e.id()).orElseThrow().attempts())
            .as("the batch the crash ended counted its attempt; the survivor's mark another").isEqualTo(2);
      }
    } finally {
      TestDatabase.dropOutbox(dataSource, table);
    }
  }

  /**
   * Starts {@link CrashingDispatcherMain} on {@code table} and kills it with SIGKILL once it published five
   * events of its batch; returns what it published.
   */
  private static Set<UUID> killAfterFivePublications(Path dir, String table, Duration lease, String claims)
      throws Exception {
    Path log = dir.resolve("published.log");
    Files.createFile(log);
    TestDatabase.Target db = TestDatabase.POSTGRES.target();
    Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"), CrashingDispatcherMain.class.getName(),
        db.url(), db.user(), db.password(), table, String.valueOf(lease.toMillis()), log.toString(), claims)
        .redirectErrorStream(true).redirectOutput(dir.resolve("child.out").toFile()).start();
    try {
      await().atMost(Duration.ofSeconds(30)).until(() -> Files.readAllLines(log).size() >= 5);
    } finally {
      child.destroyForcibly(); // SIGKILL: no shutdown hook, no finally block runs
      assertThat(child.waitFor(10, TimeUnit.SECONDS)).isTrue();
    }
    // the server ends the dead process's sessions as it sees their connections close
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).until(() -> {
      try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
          "SELECT count(*) FROM pg_stat_activity WHERE application_name = ?")) {
        ps.setString(1, childApplication(table));
        try (ResultSet rs = ps.executeQuery()) {
          return rs.next() && rs.getLong(1) == 0;
        }
      }
    });
    return Files.readAllLines(log).stream().map(UUID::fromString).collect(Collectors.toSet());
  }

  /** The application name of the sessions of the dispatcher process on {@code table}. */
  static String childApplication(String table) {
    return "mic-crashing-dispatcher-" + table;
  }
}
