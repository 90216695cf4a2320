package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Parked events on PostgreSQL, plain and partitioned tables: the waiting events of a held aggregate are parked
 * by a claim that holds, are never claimed while it is held, and go on in order right after a redrive or a
 * purge of its dead event; a dispatcher that does not hold unparks and publishes them; a claim beside parked
 * events does not read them in the claim index. Each store's first read or claim parks and unparks, which is
 * how these tests make a round happen without waiting for one.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PostgresParkingTest {
  private static final Duration TTL = Duration.ofMinutes(1);
  private static final ClaimRequest HOLDING = ClaimRequest.of("w", 50, TTL).inRuns(10).holdingOnDeadLetter();

  private HikariDataSource dataSource;
  private final List<String> tables = new ArrayList<>();
  private String table;
  private boolean partitioned;

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

  @ParameterizedTest(name = "partitioned: {0}")
  @ValueSource(booleans = {false, true})
  void parkedEventsWaitWhileHeldAndGoOnInOrderRightAfterARedrive(boolean partitioned) throws SQLException {
    JdbcOutboxStore store = newTable(partitioned);
    List<OutboxEvent> a = append(store, "a", 4);
    List<OutboxEvent> b = append(store, "b", 2);
    kill(a.get(0));

    List<OutboxEvent> claimed = store().claim(HOLDING);
    assertThat(ids(claimed)).as("only the aggregate not held").containsExactlyElementsOf(ids(b));
    assertThat(parked()).as("the waiting events of the held aggregate").containsExactlyElementsOf(ids(a.subList(1, 4)));
    assertThat(store.markDispatched(claimed)).hasSize(2);
    assertThat(store().claim(HOLDING)).as("nothing while held, by a store that parks again").isEmpty();

    assertThat(OutboxDeadLetters.builder().store(store).build().redrive(a.get(0).id())).isTrue();

    assertThat(parked()).as("unparked by the redrive").isEmpty();
    assertThat(ids(store.claim(HOLDING))).as("the redriven event first, then the waiting ones in order")
        .containsExactlyElementsOf(ids(a));
  }

  @ParameterizedTest(name = "partitioned: {0}")
  @ValueSource(booleans = {false, true})
  void parkedEventsGoOnInOrderRightAfterAPurge(boolean partitioned) throws SQLException {
    JdbcOutboxStore store = newTable(partitioned);
    List<OutboxEvent> a = append(store, "a", 3);
    List<OutboxEvent> c = append(store, "c", 3);
    kill(a.get(0));
    kill(c.get(0));

    assertThat(store().claim(HOLDING)).isEmpty();
    assertThat(parked()).containsExactly(a.get(1).id(), a.get(2).id(), c.get(1).id(), c.get(2).id());

    OutboxDeadLetters deadLetters = OutboxDeadLetters.builder().store(store).build();
    assertThat(deadLetters.purgeDeadLetters(DeadLetterQuery.builder().aggregate("order", "a").build())).isEqualTo(1);

    assertThat(parked()).as("c is still held").containsExactly(c.get(1).id(), c.get(2).id());
    assertThat(ids(store.claim(HOLDING))).as("a's waiting events in order").containsExactly(a.get(1).id(),
        a.get(2).id());
  }

  /**
   * A round waits for a redrive in progress (the advisory lock), then reads what it committed: it does not park
   * the events the redrive freed. Without the lock the round would read the dead event still there and park
   * them after the redrive had unparked what was parked.
   */
  @Test
  void aRoundWaitsForARedriveInProgressAndDoesNotParkWhatItFreed() throws Exception {
    JdbcOutboxStore store = newTable(false);
    List<OutboxEvent> a = append(store, "a", 3);
    kill(a.get(0));
    CompletableFuture<List<OutboxEvent>> claim;
    try (Connection redrive = dataSource.getConnection()) {
      redrive.setAutoCommit(false);
      PostgresParking.lock(redrive, store.access());
      try (PreparedStatement ps = redrive.prepareStatement("UPDATE " + table
          + " SET status = 'PENDING' WHERE id = ?")) {
        ps.setObject(1, a.get(0).id());
        assertThat(ps.executeUpdate()).isEqualTo(1);
      }
      JdbcOutboxStore holding = store();
      claim = CompletableFuture.supplyAsync(() -> holding.claim(HOLDING));
      await().atMost(Duration.ofSeconds(10)).until(this::waitsForTheParkingLock);
      assertThat(PostgresParking.unparkFreed(redrive, store.access(), Set.of(List.of("order", "a")))).isZero();
      redrive.commit();
    }

    assertThat(ids(claim.get(10, TimeUnit.SECONDS))).as("the redriven event, then the waiting ones")
        .containsExactlyElementsOf(ids(a));
    assertThat(parked()).isEmpty();
  }

  /** A store refuses tables of a newer schema version before it parks or unparks anything in them. */
  @Test
  void nothingIsParkedInTablesOfANewerSchemaVersion() throws SQLException {
    JdbcOutboxStore store = newTable(false);
    List<OutboxEvent> a = append(store, "a", 3);
    kill(a.get(0));
    sql("UPDATE " + table + "_control SET tables_version = " + (JdbcOutboxStore.SCHEMA_VERSION + 1)
        + " WHERE topic = '#schema'");

    assertThatThrownBy(() -> store().claim(HOLDING)).isInstanceOf(SchemaTooNewException.class);
    assertThatThrownBy(() -> store().fetchPendingHeads(10, Set.of(), Set.of(), true))
        .isInstanceOf(SchemaTooNewException.class);
    assertThat(parked()).isEmpty();
  }

  @ParameterizedTest(name = "partitioned: {0}")
  @ValueSource(booleans = {false, true})
  void aDispatcherThatDoesNotHoldUnparksAndPublishesThem(boolean partitioned) throws SQLException {
    JdbcOutboxStore store = newTable(partitioned);
    List<OutboxEvent> a = append(store, "a", 3);
    kill(a.get(0));
    assertThat(store().claim(HOLDING)).isEmpty();
    assertThat(parked()).hasSize(2);

    List<UUID> published = new ArrayList<>();
    OutboxDispatcher notHolding = OutboxDispatcher.builder().store(store()).useClaim(true)
        .preserveAggregateOrder(true).dispatchFn(e -> published.add(e.id())).build();
    while (notHolding.dispatchOnce().dispatched() > 0) {
      assertThat(published).isNotEmpty();
    }

    assertThat(published).as("released by the dead event, in order").containsExactly(a.get(1).id(), a.get(2).id());
    assertThat(parked()).isEmpty();
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 2L).containsEntry(OutboxStatus.DLQ, 1L);
  }

  @Test
  void aReadThatDoesNotHoldUnparksThem() throws SQLException {
    JdbcOutboxStore store = newTable(false);
    List<OutboxEvent> a = append(store, "a", 3);
    kill(a.get(0));
    assertThat(store().fetchPendingHeads(10, Set.of(), Set.of(), true)).isEmpty();
    assertThat(parked()).hasSize(2);

    assertThat(ids(store().fetchPending(10, true))).as("the next head, unparked").containsExactly(a.get(1).id());
    assertThat(parked()).isEmpty();
  }

  /**
   * 1,000 held aggregates with 3 events waiting each come first in dispatch order, before 20,000 events of other
   * aggregates. Before parking, the claim's scan of the claim index reads all 3,000 before the 100 heads it
   * picks; parked, it reads none of them: the index leaves them out.
   */
  @ParameterizedTest(name = "partitioned: {0}")
  @ValueSource(booleans = {false, true})
  void aClaimBesideParkedEventsDoesNotReadThem(boolean partitioned) throws SQLException {
    JdbcOutboxStore store = newTable(partitioned);
    List<OutboxEvent> held = new ArrayList<>();
    for (int i = 0; i < 1_000; i++) {
      for (int n = 0; n < 4; n++) {
        held.add(OutboxEvent.builder().aggregate("order", "held-" + i).topic("order.changed").payload("{}").build());
      }
    }
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, held);
      c.commit();
      c.setAutoCommit(true);
    }
    TestDatabase.appendOrders(dataSource, store, 20_000);
    sql("UPDATE " + table + " SET status = 'DLQ' WHERE aggregate_id LIKE 'held-%' AND sequence = 1");
    sql("ANALYZE " + table);

    List<String> claimIndexes = claimIndexes();
    String plan = claimPlan(store);
    assertThat(scansOf(plan, claimIndexes)).as("scans of the claim index:%n%s", plan).isPositive();
    assertThat(readAt(plan, claimIndexes)).as("rows read before parking:%n%s", plan).isGreaterThanOrEqualTo(3_100);

    assertThat(store.fetchPendingHeads(1, Set.of(), Set.of(), true)).hasSize(1); // parks
    assertThat(parked()).hasSize(3_000);
    sql("VACUUM ANALYZE " + table);

    plan = claimPlan(store);
    assertThat(scansOf(plan, claimIndexes)).as("scans of the claim index:%n%s", plan).isPositive();
    assertThat(readAt(plan, claimIndexes)).as("rows read, parked:%n%s", plan).isBetween(100L, 110L);
    assertThat(store.claim(ClaimRequest.of("w", 100, TTL).inRuns(100).holdingOnDeadLetter()))
        .hasSize(100).allMatch(e -> e.aggregateId().startsWith("o-"));
  }

  /**
   * A table created before parked events (schema version 1): nothing is parked on it and holding works as
   * before; createSchema() replaces its claim index and adds the parked events' index, the doctor's index
   * check passes again, and the next round parks.
   */
  @Test
  void anOldClaimIndexWorksAndCreateSchemaUpgradesIt() throws SQLException {
    table = TestDatabase.uniqueName("outbox_park_old");
    tables.add(table);
    OldSchemas.BEFORE_PARKING.create(dataSource, table);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    List<OutboxEvent> a = append(store, "a", 3);
    List<OutboxEvent> b = append(store, "b", 1);
    kill(a.get(0));
    assertThat(ids(store().claim(HOLDING))).containsExactlyElementsOf(ids(b));
    assertThat(parked()).isEmpty();
    assertThat(new TableChecks(store, store.access()).indexes().figure()).contains("missing: index " + table
        + "_parked_idx");
    sql("CREATE INDEX " + table + "_parked_idx ON " + table + " (aggregate_type, aggregate_id)"
        + " WHERE status = 'PENDING' AND next_attempt_at = 'infinity'");
    OutboxDoctor.Check stale = new TableChecks(store, store.access()).indexes();
    assertThat(stale.verdict()).isEqualTo(OutboxDoctor.Verdict.WARN);
    assertThat(stale.figure()).isEqualTo("index " + table + "_claim_idx holds parked events too (a table older than"
        + " schema version 2): claims step over the waiting events of held aggregates");

    store.createSchema();
    assertThat(store().claim(HOLDING)).isEmpty();
    assertThat(parked()).hasSize(2);

    assertThat(OldSchemas.indexes(dataSource, table)).contains(table + "_parked_idx");
    assertThat(indexDefinition(table + "_claim_idx"))
        .endsWith("AND (next_attempt_at < 'infinity'::timestamp with time zone))");
    assertThat(new TableChecks(store, store.access()).indexes().verdict()).isEqualTo(OutboxDoctor.Verdict.PASS);
    assertThat(OutboxDeadLetters.builder().store(store).build().redrive(a.get(0).id())).isTrue();
    assertThat(ids(store.claim(HOLDING))).containsExactlyElementsOf(ids(a));
  }

  /**
   * A partitioned table whose claim index holds parked events too: createSchema() replaces it on the table and
   * every partition. A plain table converted to a partitioned one keeps every index on the table itself.
   */
  @Test
  void createSchemaUpgradesTheClaimIndexOfAPartitionedTableAndAConversionKeepsEveryIndex() throws SQLException {
    newTable(false);
    JdbcOutboxStore converted = store(true);
    converted.createSchema(); // the plain table becomes the past partition
    List<String> parentIndexes = OldSchemas.indexes(dataSource, table);
    assertThat(parentIndexes).contains(table + "_claim_idx", table + "_head_idx", table + "_dlq_idx",
        table + "_held_idx", table + "_parked_idx");
    sql("DROP INDEX " + table + "_parked_idx");
    sql("DROP INDEX " + table + "_claim_idx");
    sql("CREATE INDEX " + table + "_claim_idx ON " + table + " (priority DESC, created_at, id)"
        + " WHERE status IN ('PENDING', 'PROCESSING')");
    List<OutboxEvent> a = append(converted, "a", 3);
    kill(a.get(0));

    converted.createSchema();

    assertThat(indexDefinition(table + "_claim_idx")).contains("next_attempt_at < 'infinity'");
    List<String> claimIndexes = claimIndexes();
    assertThat(claimIndexes).as("the table's and its partitions'").hasSizeGreaterThan(2);
    assertThat(OldSchemas.indexes(dataSource, table)).contains(table + "_parked_idx")
        .doesNotContain(table + "_claim_old_idx");
    assertThat(store(true).claim(HOLDING)).isEmpty();
    assertThat(parked()).hasSize(2);
  }

  @Test
  void theUpgradeScriptNamesTheTableAndItsIndexesWithTheSchema() {
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table("billing.events").build();
    assertThat(store.upgradeIndexesDdl())
        .contains("CREATE INDEX IF NOT EXISTS \"events_parked_idx\"\n    ON \"billing\".\"events\"")
        .contains("ALTER INDEX IF EXISTS \"billing\".\"events_claim_idx\" RENAME TO \"events_claim_old_idx\"")
        .contains("DROP INDEX IF EXISTS \"billing\".\"events_claim_old_idx\"");
  }

  private JdbcOutboxStore newTable(boolean partitioned) {
    this.partitioned = partitioned;
    table = TestDatabase.uniqueName("outbox_park");
    tables.add(table);
    JdbcOutboxStore store = store();
    store.createSchema();
    return store;
  }

  /** A new store on the table: its first read or claim parks and unparks. */
  private JdbcOutboxStore store() {
    return store(partitioned);
  }

  private JdbcOutboxStore store(boolean partitioned) {
    JdbcOutboxStore.Builder builder = JdbcOutboxStore.builder().dataSource(dataSource).table(table);
    return (partitioned ? builder.partitionInterval(Duration.ofDays(1)) : builder).build();
  }

  private List<OutboxEvent> append(JdbcOutboxStore store, String aggregateId, int count) throws SQLException {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      events.add(OutboxEvent.builder().aggregate("order", aggregateId).topic("order.changed")
          .payload("{\"n\":" + i + "}").build());
    }
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
      c.setAutoCommit(true);
    }
    return events;
  }

  /** Puts {@code event} in the DLQ, as a dispatcher does after its last failed attempt. */
  private void kill(OutboxEvent event) throws SQLException {
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("UPDATE " + table
        + " SET status = 'DLQ', attempts = 3, last_error = 'rejected' WHERE id = ?")) {
      ps.setObject(1, event.id());
      assertThat(ps.executeUpdate()).isEqualTo(1);
    }
  }

  /** Whether a session waits for the table's parking lock (its key's low 32 bits are the lock's objid). */
  private boolean waitsForTheParkingLock() throws SQLException {
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM"
        + " pg_locks WHERE locktype = 'advisory' AND NOT granted AND CAST(objid AS bigint)"
        + " = (CAST(hashtext(?) AS bigint) & 4294967295)")) {
      ps.setString(1, "mic-outbox parking \"" + table + "\""); // the table as quoted for SQL
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() && rs.getLong(1) > 0;
      }
    }
  }

  /** The parked events, in their aggregates' order. */
  private List<UUID> parked() throws SQLException {
    List<UUID> ids = new ArrayList<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
        "SELECT id FROM " + table + " WHERE status = 'PENDING' AND next_attempt_at = 'infinity'"
            + " ORDER BY aggregate_id, created_at, id")) {
      while (rs.next()) {
        ids.add(rs.getObject(1, UUID.class));
      }
    }
    return ids;
  }

  /** The plan, as run, of the heads an ordered claim that holds picks: the claim's conditions, as it has them. */
  private String claimPlan(JdbcOutboxStore store) throws SQLException {
    TableAccess access = store.access();
    DispatchSql sql = new DispatchSql(access.dialect, Tables.of(access.name, access.dialect),
        Statements.Database.POSTGRESQL);
    ReadRequest r = ReadRequest.claim(ClaimRequest.of("w", 100, TTL).inRuns(100).holdingOnDeadLetter())
        .withoutControl();
    StringBuilder plan = new StringBuilder();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT o.id FROM " + table + " o WHERE " + sql.claimable()
            + sql.isHead(r) + " ORDER BY " + sql.dispatchOrder() + " LIMIT 100")) {
      while (rs.next()) {
        plan.append(rs.getString(1)).append('\n');
      }
    }
    return plan.toString();
  }

  /** The table's claim index, and on a partitioned table the partitions' ones. */
  private List<String> claimIndexes() throws SQLException {
    List<String> names = new ArrayList<>(List.of(table + "_claim_idx"));
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement("SELECT"
        + " CAST(inhrelid AS regclass) FROM pg_inherits WHERE inhparent = to_regclass(?)")) {
      ps.setString(1, table + "_claim_idx");
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
    }
    return names;
  }

  private static long scansOf(String plan, List<String> indexes) {
    return plan.lines().filter(l -> indexes.stream().anyMatch(i -> l.contains("Index Scan using " + i + " on ")))
        .count();
  }

  /** The rows the scans of {@code indexes} read: those they returned and those their filter left out. */
  private static long readAt(String plan, List<String> indexes) {
    long read = 0;
    String[] lines = plan.split("\n");
    for (int i = 0; i < lines.length; i++) {
      String line = lines[i];
      if (indexes.stream().noneMatch(index -> line.contains("Index Scan using " + index + " on "))) {
        continue;
      }
      Matcher rows = Pattern.compile("actual rows=(\\d+) loops=(\\d+)").matcher(line);
      if (rows.find()) {
        read += Long.parseLong(rows.group(1)) * Long.parseLong(rows.group(2));
      }
      for (int j = i + 1; j < lines.length && !lines[j].contains("->"); j++) {
        Matcher m = Pattern.compile("Rows Removed by Filter: (\\d+)").matcher(lines[j]);
        if (m.find()) {
          read += Long.parseLong(m.group(1));
        }
      }
    }
    return read;
  }

  private String indexDefinition(String index) throws SQLException {
    try (Connection c = dataSource.getConnection(); PreparedStatement ps = c.prepareStatement(
        "SELECT indexdef FROM pg_indexes WHERE indexname = ?")) {
      ps.setString(1, index);
      try (ResultSet rs = ps.executeQuery()) {
        assertThat(rs.next()).as("index %s", index).isTrue();
        return rs.getString(1);
      }
    }
  }

  private void sql(String statement) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }

  private static List<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).toList();
  }
}
