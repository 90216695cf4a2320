package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.DuplicateEventException;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.PostgresPartitions.Partition;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** The partitions of a partitioned PostgreSQL outbox: created ahead, kept, dropped, and what lands where. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresPartitionsTest {
  private static final Duration HOUR = Duration.ofHours(1);
  private HikariDataSource dataSource;
  private final List<String> tables = new ArrayList<>();

  @BeforeAll
  void connect() {
    dataSource = TestDatabase.POSTGRES.dataSource(6, "SET TIME ZONE 'Asia/Kathmandu'"); // +05:45: bounds in an odd zone
  }

  @AfterAll
  void disconnect() {
    dataSource.close();
  }

  @AfterEach
  void dropTables() {
    tables.forEach(t -> {
      TestDatabase.dropOutbox(dataSource, t);
      sql("DROP TABLE IF EXISTS " + t + "_future_moving");
    });
    tables.clear();
  }

  @Test
  void createSchemaMakesTheCurrentPartitionThreeAheadAndTheCatchAllRanges() {
    JdbcOutboxStore store = partitionedStore();
    List<Partition> partitions = partitions(store);

    assertThat(new PostgresPartitions(store.access(), HOUR).kind()).isEqualTo("p");
    assertThat(partitions).hasSize(1 + 1 + PostgresPartitions.AHEAD + 1);
    assertThat(partitions.get(0).name()).isEqualTo(store.table() + "_past");
    assertThat(partitions.get(0).lower()).isNull();
    assertThat(partitions.get(partitions.size() - 1).name()).isEqualTo(store.table() + "_future");
    assertThat(partitions.get(partitions.size() - 1).upper()).isNull();
    Instant now = Instant.now();
    Partition current = partitions.get(1);
    assertThat(current.lower()).isBeforeOrEqualTo(now).isEqualTo(Instant.ofEpochSecond(now.getEpochSecond() / 3600 * 3600));
    for (int i = 1; i < partitions.size(); i++) {
      assertThat(partitions.get(i).lower()).as("no gap before %s", partitions.get(i).name())
          .isEqualTo(partitions.get(i - 1).upper());
    }
  }

  @Test
  void ensurePartitionsIsIdempotent() {
    JdbcOutboxStore store = partitionedStore();
    List<Partition> before = partitions(store);

    assertThat(maintenance(store).ensurePartitions()).isZero();
    assertThat(maintenance(store).ensurePartitions()).isZero();

    assertThat(partitions(store)).isEqualTo(before);
  }

  @Test
  void twoCallersOfEnsurePartitionsCreateEachPartitionOnce() throws Exception {
    JdbcOutboxStore store = partitionedStore();
    List<Partition> before = partitions(store);
    dropAheadPartitions(store, before);
    CountDownLatch start = new CountDownLatch(1);
    ExecutorService callers = Executors.newFixedThreadPool(2);
    try {
      List<Future<Integer>> created = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        created.add(callers.submit(() -> {
          start.await();
          return maintenance(store).ensurePartitions();
        }));
      }
      start.countDown();

      assertThat(created.get(0).get() + created.get(1).get()).isEqualTo(PostgresPartitions.AHEAD);
    } finally {
      callers.shutdownNow();
    }
    assertThat(partitions(store)).isEqualTo(before);
  }

  @Test
  void anAppendBeyondThePartitionsLandsInTheFuturePartitionAndEnsurePartitionsMovesIt() throws SQLException {
    JdbcOutboxStore store = partitionedStore();
    List<Partition> before = partitions(store);
    // as if no one had kept the partitions ahead for a long time: the future partition starts in the past
    Partition current = before.get(1);
    before.subList(1, before.size()).forEach(p -> sql("DROP TABLE " + p.name()));
    sql("CREATE TABLE " + store.table() + "_future PARTITION OF " + store.table() + " FOR VALUES FROM ('"
        + current.lower() + "') TO (MAXVALUE)");

    OutboxEvent e = TestDatabase.appendOrders(dataSource, store, 1).get(0);
    assertThat(count(store.table() + "_future")).isEqualTo(1);
    OutboxDoctor.Check warned = doctorCheck(store);
    assertThat(warned.verdict()).isEqualTo(OutboxDoctor.Verdict.WARN);
    assertThat(warned.figure()).isEqualTo("no partition covers the present: appends go to " + store.table() + "_future");
    assertThat(warned.remedy()).startsWith("run OutboxMaintenance.ensurePartitions()");

    assertThat(maintenance(store).ensurePartitions()).isEqualTo(1 + PostgresPartitions.AHEAD);
    assertThat(doctorCheck(store)).isEqualTo(OutboxDoctor.Check.pass("partitions", (3 + PostgresPartitions.AHEAD)
        + " partition(s), " + PostgresPartitions.AHEAD + " ahead of the current one"));
    assertThat(partitions(store)).isEqualTo(before);
    assertThat(count(store.table() + "_future")).isZero();
    assertThat(count(current.name())).isEqualTo(1);
    assertThat(store.find(e.id())).get().extracting(OutboxEvent::status).isEqualTo(OutboxStatus.PENDING);
  }

  @Test
  void aPartitionHoldingALiveRowIsNotDropped() throws SQLException {
    JdbcOutboxStore store = partitionedStore();
    String old = hourlyHistory(store);
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 3);
    Instant middleOfTheHourBefore = partitions(store).get(2).lower().minus(Duration.ofMinutes(30)); // old's
    StoredTimes.shift(dataSource, store, Duration.between(middleOfTheHourBefore, Instant.now()));
    assertThat(count(old)).isEqualTo(3);
    OutboxMaintenance maintenance = maintenance(store);

    assertThat(maintenance.dropPartitionsOlderThan(Duration.ZERO)).as("the empty past partition").isEqualTo(1);
    assertThat(maintenance.dropPartitionsOlderThan(Duration.ZERO)).as("three pending rows").isZero();
    assertThat(store.markDispatched(events.subList(0, 2))).hasSize(2);
    assertThat(store.markDead(store.find(events.get(2).id()).orElseThrow(), "poison")).isTrue();
    assertThat(maintenance.dropPartitionsOlderThan(Duration.ZERO)).as("a dead letter").isZero();
    assertThat(count(old)).isEqualTo(3);

    assertThat(OutboxDeadLetters.builder().store(store).build().purgeDeadLetters(DeadLetterQuery.all())).isEqualTo(1);
    assertThat(maintenance.dropPartitionsOlderThan(Duration.ofHours(3))).as("not old enough").isZero();
    assertThat(maintenance.dropPartitionsOlderThan(Duration.ZERO)).isEqualTo(1);
    assertThat(partitions(store)).extracting(Partition::name).doesNotContain(old);
    assertThat(store.find(events.get(0).id())).isEmpty();
  }

  @Test
  void anIdIsUniqueAcrossPartitions() throws SQLException {
    JdbcOutboxStore store = partitionedStore();
    OutboxEvent e = TestDatabase.appendOrders(dataSource, store, 1).get(0);
    StoredTimes.shift(dataSource, store, Duration.ofHours(2)); // the row moves to the past partition

    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      assertThatThrownBy(() -> store.append(c, e)).isInstanceOf(DuplicateEventException.class)
          .hasMessageContaining(e.id().toString());
      c.rollback();
      assertThatThrownBy(() -> store.append(c, List.of(OutboxEvent.builder().aggregate("order", "o-1")
          .topic("order.created").payload("{}").build(), e)))
          .isInstanceOf(DuplicateEventException.class).hasMessageContaining(e.id().toString());
      c.rollback();
    }
  }

  @Test
  void otherDatabasesAndBadIntervalsAreRefusedAtBuild() {
    try (HikariDataSource h2 = TestDatabase.H2.dataSource(1, null)) {
      assertThatThrownBy(() -> JdbcOutboxStore.builder().dataSource(h2).partitionInterval(HOUR).build())
          .isInstanceOf(InvalidConfigurationException.class)
          .hasMessageContaining("partitionInterval(PT1H) needs PostgreSQL").hasMessageContaining("H2");
    }
    assertThatThrownBy(() -> JdbcOutboxStore.builder().partitionInterval(Duration.ofMinutes(10)))
        .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("at least PT1H");
    assertThatThrownBy(() -> JdbcOutboxStore.builder().partitionInterval(Duration.ofSeconds(3601)))
        .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("whole minutes");
    JdbcOutboxStore plain = JdbcOutboxStore.builder().dataSource(dataSource).table("outbox_unused").build();
    assertThatThrownBy(() -> maintenance(plain).ensurePartitions())
        .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("partitionInterval");
  }

  /**
   * Makes the hour before the current one a partition of its own, as if the table had been created then:
   * {@code past} ends two hours back. Returns the hour's partition.
   */
  private String hourlyHistory(JdbcOutboxStore store) {
    List<Partition> partitions = partitions(store);
    Instant current = partitions.get(1).lower();
    String past = partitions.get(0).name();
    String old = store.table() + "_old";
    sql("DROP TABLE " + past);
    sql("CREATE TABLE " + past + " PARTITION OF " + store.table() + " FOR VALUES FROM (MINVALUE) TO ('"
        + current.minus(HOUR) + "')");
    sql("CREATE TABLE " + old + " PARTITION OF " + store.table() + " FOR VALUES FROM ('" + current.minus(HOUR)
        + "') TO ('" + current + "')");
    return old;
  }

  private void dropAheadPartitions(JdbcOutboxStore store, List<Partition> partitions) {
    partitions.subList(2, partitions.size() - 1).forEach(p -> sql("DROP TABLE " + p.name()));
  }

  private JdbcOutboxStore partitionedStore() {
    String table = TestDatabase.uniqueName("outbox_pt");
    tables.add(table);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table)
        .partitionInterval(HOUR).build();
    store.createSchema();
    return store;
  }

  private static OutboxDoctor.Check doctorCheck(JdbcOutboxStore store) {
    return OutboxDoctor.builder().store(store).build().checks().stream().filter(c -> c.name().equals("partitions"))
        .findFirst().orElseThrow();
  }

  static OutboxMaintenance maintenance(JdbcOutboxStore store) {
    return OutboxMaintenance.builder().store(store).build();
  }

  static List<Partition> partitions(JdbcOutboxStore store) {
    return new PostgresPartitions(store.access(), HOUR).list();
  }

  private long count(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        var rs = s.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private void sql(String statement) {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    } catch (SQLException e) {
      throw new IllegalStateException(statement, e);
    }
  }
}
