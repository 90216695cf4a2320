package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.ArchiveException;
import io.mic.outbox.ArchiveSink;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.archive.ArchiveOrder;
import io.mic.outbox.archive.ArchivedEvent;
import io.mic.outbox.archive.ClickHouseArchive;
import io.mic.outbox.archive.JsonLinesArchive;
import io.mic.outbox.archive.JsonText;
import io.mic.outbox.jdbc.archive.ArchiveResult;
import io.mic.outbox.jdbc.archive.OutboxArchiver;
import io.mic.outbox.testkit.CapturedStderr;
import io.mic.replay.ClickHouseArchiveSource;
import io.mic.replay.EventReplay;
import io.mic.replay.JsonArchiveSource;
import io.mic.replay.ReplayCommand;
import io.mic.replay.ReplayMessage;
import io.mic.replay.ReplayResult;
import io.mic.replay.ReplaySink;
import io.mic.replay.ReplaySource;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * dispatch → archive → purge → replay on real PostgreSQL, MariaDB and H2 (and ClickHouse, from PostgreSQL, at {@code MIC_TEST_CLICKHOUSE_URL},
 * default {@code http://127.0.0.1:8123}; unreachable: skipped, or a failure under {@code CI=true}).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ArchiveRoundTripTest {
  private static final String TOPIC_A = "order.created";
  private static final String TOPIC_B = "order.paid";
  private static final String[] PAYLOADS = {
      "{\"n\": %d, \"items\": [1, 2.5, \"x\"], \"note\": \"héllo \\u263a\", \"nested\": {\"ok\": true, \"v\": null}}",
      "[%d, {\"a\": \"b\"}]", "%d", "\"text %d\""};

  private final Map<TestDatabase, HikariDataSource> pools = new EnumMap<>(TestDatabase.class);
  private HikariDataSource dataSource;
  private JdbcOutboxStore store;
  private String table;
  private final List<String> clickHouseTables = new ArrayList<>();
  @TempDir Path tmp;

  static Stream<TestDatabase> databases() {
    return Stream.of(TestDatabase.POSTGRES, TestDatabase.MARIADB, TestDatabase.H2);
  }

  /** A store on a new table of {@code db}, whose sessions run far from UTC. */
  private void use(TestDatabase db) {
    dataSource = pools.computeIfAbsent(db, d -> d.dataSource(4, switch (d) {
      case POSTGRES -> "SET TIME ZONE 'Asia/Kathmandu'";
      case MARIADB -> "SET time_zone = '+05:45'";
      default -> null;
    }));
    table = TestDatabase.uniqueName("outbox_arch");
    store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
  }

  @AfterAll
  void disconnect() {
    pools.values().forEach(HikariDataSource::close);
  }

  @AfterEach
  void drop() throws Exception {
    if (table != null) {
      TestDatabase.dropOutbox(dataSource, table);
      table = null;
    }
    for (String t : clickHouseTables) {
      clickHouse("DROP TABLE IF EXISTS " + t);
    }
    clickHouseTables.clear();
  }

  @ParameterizedTest
  @MethodSource("databases")
  void jsonLinesArchiveReplaysToTheSameEvents(TestDatabase db) throws Exception {
    use(db);
    List<OutboxEvent> old = dispatchedHistory(25);
    Path dir = tmp.resolve("archive");
    OutboxArchiver archiver = OutboxArchiver.builder().store(store).batchSize(7)
        .sink(JsonLinesArchive.builder().directory(dir).maxEventsPerFile(5).build()).build();

    ArchiveResult result = archiver.archiveAndPurge(Duration.ofDays(7));

    assertThat(result).isEqualTo(new ArchiveResult(25, 25, 4));
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 2L).containsEntry(OutboxStatus.PENDING, 3L);
    for (OutboxEvent e : old) {
      assertThat(store.find(e.id())).isEmpty();
    }
    List<Path> files = archiveFiles(dir);
    assertThat(files).hasSize(7); // pages of 7, 7, 7, 4 in files of at most 5
    assertThat(files).allMatch(f -> f.getFileName().toString()
        .matches("outbox-\\d{8}T\\d{6}\\.\\d{3,9}Z-\\d{8}T\\d{6}\\.\\d{3,9}Z-[0-9a-f-]{36}\\.jsonl\\.gz"));
    try (Stream<Path> all = Files.list(dir)) {
      assertThat(all.filter(f -> f.getFileName().toString().startsWith("."))).isEmpty(); // no temp files left
    }
    for (Path f : files) {
      byte[] head = Files.readAllBytes(f);
      assertThat(head[0] & 0xff).isEqualTo(0x1f);
      assertThat(head[1] & 0xff).isEqualTo(0x8b);
    }
    Path all = concatenate(files, tmp.resolve("all.jsonl.gz"));
    for (String topic : List.of(TOPIC_A, TOPIC_B)) {
      List<ArchivedEvent> replayed = replay(JsonArchiveSource.of(all), topic);
      assertSameEvents(replayed, old, topic, false);
      // the command itself, as an operator runs it: a dry run lists the same events in the same order
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      ByteArrayOutputStream err = new ByteArrayOutputStream();
      int exit = ReplayCommand.execute(new String[] {"--from-json", all.toString(), "--topic", topic,
          "--from", "2000-01-01T00:00:00Z", "--to", "2100-01-01T00:00:00Z"},
          new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
      assertThat(exit).as(err.toString(StandardCharsets.UTF_8)).isZero();
      List<String> ids = new ArrayList<>();
      Matcher m = Pattern.compile("\"original_id\":\"([^\"]+)\"").matcher(out.toString(StandardCharsets.UTF_8));
      while (m.find()) {
        ids.add(m.group(1));
      }
      assertThat(ids).isEqualTo(replayed.stream().map(ArchivedEvent::id).toList());
      List<String> sequences = new ArrayList<>();
      Matcher seq = Pattern.compile("\"sequence\":(\\d+)").matcher(out.toString(StandardCharsets.UTF_8));
      while (seq.find()) {
        sequences.add(seq.group(1));
      }
      assertThat(sequences).as("the dry run shows each event's sequence")
          .isEqualTo(replayed.stream().map(e -> e.envelope().sequence().toString()).toList());
    }
  }

  @Test
  void clickHouseArchiveReplaysToTheSameEvents() throws Exception {
    requireClickHouse();
    use(TestDatabase.POSTGRES);
    List<OutboxEvent> old = dispatchedHistory(23);
    String chTable = clickHouseTable();
    ClickHouseArchive ch = ClickHouseArchive.builder().url(clickHouseUrl()).table(chTable).build();
    ch.createTable();
    Path dir = tmp.resolve("both");
    OutboxArchiver archiver = OutboxArchiver.builder().store(store).batchSize(10)
        .sink(JsonLinesArchive.builder().directory(dir).build()).sink(ch).build();

    assertThat(archiver.archiveAndPurge(Duration.ofDays(7))).isEqualTo(new ArchiveResult(23, 23, 3));
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 2L);

    ClickHouseArchiveSource source = ClickHouseArchiveSource.builder().url(clickHouseUrl()).table(chTable).build();
    for (String topic : List.of(TOPIC_A, TOPIC_B)) {
      assertSameEvents(replay(source, topic), old, topic, true);
    }
    Path all = concatenate(archiveFiles(dir), tmp.resolve("both.jsonl.gz"));
    assertSameEvents(replay(JsonArchiveSource.of(all), TOPIC_A), old, TOPIC_A, false);
  }

  /**
   * A payload column of the wrong type: ClickHouse's answer to the insert would quote the row, payload included.
   * The archiver checks the column types first, and no payload text and no password reach an exception or a log.
   */
  @Test
  void aColumnOfTheWrongTypeIsRefusedBeforeTheInsertAndNoPayloadOrSecretReachesAMessageOrALog() throws Exception {
    requireClickHouse();
    use(TestDatabase.POSTGRES);
    String marker = "PII-MARKER-" + UUID.randomUUID();
    String secret = "s3cret-" + UUID.randomUUID();
    append(List.of(OutboxEvent.builder().aggregate("person", "1").topic(TOPIC_A)
        .payload("{\"name\":\"" + marker + "\"}").build()));
    dispatchAll();
    StoredTimes.shift(dataSource, store, Duration.ofDays(10));
    String chTable = clickHouseTable();
    clickHouse("CREATE TABLE " + chTable + " (id String, topic String, aggregate_type Nullable(String),"
        + " aggregate_id Nullable(String), created_at DateTime('UTC'), payload UInt64, headers String)"
        + " ENGINE = MergeTree ORDER BY (topic, created_at, id)");
    OutboxArchiver wrongType = OutboxArchiver.builder().store(store)
        .sink(ClickHouseArchive.builder().url(clickHouseUrl()).table(chTable).build()).build();
    OutboxArchiver wrongPassword = OutboxArchiver.builder().store(store)
        .sink(ClickHouseArchive.builder().url(clickHouseUrl()).table(chTable).credentials("default", secret).build())
        .build();
    List<String> messages = new ArrayList<>();

    String log = CapturedStderr.during(() -> {
      messages.add(catchArchiveException(() -> wrongType.archiveAndPurge(Duration.ofDays(7))).getMessage());
      messages.add(catchArchiveException(() -> wrongPassword.archiveAndPurge(Duration.ofDays(7))).toString());
    });

    assertThat(messages.get(0)).isEqualTo("column payload of ClickHouse table " + chTable + " is UInt64; expected"
        + " String (the archive writes JSON text there): alter the column, or create the table with"
        + " ClickHouseArchive.createTable()");
    assertThat(messages.get(1)).contains("refused the description of table " + chTable + " (HTTP ");
    assertThat(log).contains("WARN io.mic.outbox.jdbc.archive.OutboxArchiver - outbox table " + table
        + ": archive failed after 0 event(s) archived and 0 purged; a page of 1 kept:"
        + " io.mic.outbox.ArchiveException: column payload of ClickHouse table " + chTable + " is UInt64");
    assertThat(String.join("\n", messages) + log).doesNotContain(marker).doesNotContain(secret);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 1L);
    assertThat(clickHouseCount(chTable)).isZero();
  }

  private static ArchiveException catchArchiveException(Runnable run) {
    try {
      run.run();
    } catch (ArchiveException e) {
      return e;
    }
    throw new AssertionError("no ArchiveException");
  }

  /** A table made before the envelope takes rows without its columns, and replays without them. */
  @Test
  void aClickHouseTableWithoutTheEnvelopeColumnsIsStillWrittenAndRead() throws Exception {
    requireClickHouse();
    use(TestDatabase.POSTGRES);
    List<OutboxEvent> old = dispatchedHistory(6);
    String chTable = clickHouseTable();
    clickHouse("CREATE TABLE " + chTable + " (id String, topic String, aggregate_type Nullable(String),"
        + " aggregate_id Nullable(String), created_at DateTime('UTC'), payload String, headers String)"
        + " ENGINE = MergeTree ORDER BY (topic, created_at, id)");
    OutboxArchiver archiver = OutboxArchiver.builder().store(store)
        .sink(ClickHouseArchive.builder().url(clickHouseUrl()).table(chTable).build()).build();

    assertThat(archiver.archiveAndPurge(Duration.ofDays(7))).isEqualTo(new ArchiveResult(6, 6, 1));

    List<ArchivedEvent> replayed = replay(ClickHouseArchiveSource.builder().url(clickHouseUrl()).table(chTable)
        .build(), TOPIC_A);
    assertThat(replayed).extracting(ArchivedEvent::id).containsExactlyInAnyOrderElementsOf(old.stream()
        .filter(e -> e.topic().equals(TOPIC_A)).map(e -> e.id().toString()).toList());
    assertThat(replayed).allSatisfy(e -> {
      assertThat(e.envelope()).isEqualTo(ArchivedEvent.Envelope.NONE);
      assertThat(ReplayMessage.of(e, "b").headers()).doesNotContainKeys(OutboxHeaders.SEQUENCE,
          OutboxHeaders.SCHEMA_VERSION, OutboxHeaders.OCCURRED_AT, OutboxHeaders.TRACEPARENT);
    });
  }

  /**
   * One time-zone rule for the archiver and the replay: a DateTime in any zone carries the same instants
   * both ways (Unix seconds), and a time type outside the rule is refused by both, in the same words.
   */
  @Test
  void theArchiverAndTheReplayKeepOneRuleForTheZoneOfTheTimeColumn() throws Exception {
    requireClickHouse();
    use(TestDatabase.POSTGRES);
    List<OutboxEvent> old = dispatchedHistory(4);
    String tokyo = clickHouseTable();
    clickHouse("CREATE TABLE " + tokyo + " (id String, topic String, aggregate_type Nullable(String),"
        + " aggregate_id Nullable(String), created_at DateTime('Asia/Tokyo'), payload String, headers String)"
        + " ENGINE = MergeTree ORDER BY (topic, created_at, id)");
    OutboxArchiver archiver = OutboxArchiver.builder().store(store)
        .sink(ClickHouseArchive.builder().url(clickHouseUrl()).table(tokyo).build()).build();

    assertThat(archiver.archiveAndPurge(Duration.ofDays(7)).archived()).isEqualTo(4);
    List<ArchivedEvent> replayed = replay(ClickHouseArchiveSource.builder().url(clickHouseUrl()).table(tokyo)
        .build(), TOPIC_A);
    assertThat(replayed).extracting(ArchivedEvent::createdAt).containsExactlyInAnyOrderElementsOf(old.stream()
        .filter(e -> e.topic().equals(TOPIC_A)).map(e -> e.createdAt().truncatedTo(ChronoUnit.SECONDS)).toList());

    String dated = clickHouseTable();
    clickHouse("CREATE TABLE " + dated + " (id String, topic String, aggregate_type Nullable(String),"
        + " aggregate_id Nullable(String), created_at Date, payload String, headers String)"
        + " ENGINE = MergeTree ORDER BY (topic, created_at, id)");
    String rule = "column created_at of ClickHouse table " + dated + " is Date; expected DateTime (any time zone)"
        + " or DateTime64(p, 'UTC')";
    append(List.of(OutboxEvent.builder().aggregate("order", "9").topic(TOPIC_A).payload("{}").build()));
    dispatchAll();
    StoredTimes.shift(dataSource, store, Duration.ofDays(10));
    OutboxArchiver toDated = OutboxArchiver.builder().store(store)
        .sink(ClickHouseArchive.builder().url(clickHouseUrl()).table(dated).build()).build();
    assertThat(catchArchiveException(() -> toDated.archiveAndPurge(Duration.ofDays(7)))).hasMessage(rule);
    assertThatThrownBy(() -> replay(ClickHouseArchiveSource.builder().url(clickHouseUrl()).table(dated).build(),
        TOPIC_A)).isInstanceOf(io.mic.replay.ReplayInputException.class).hasMessage(rule);
  }

  @Test
  void missingClickHouseTablePurgesNothing() throws Exception {
    requireClickHouse();
    use(TestDatabase.POSTGRES);
    List<OutboxEvent> old = dispatchedHistory(9);
    Path dir = tmp.resolve("first");
    ClickHouseArchive missing = ClickHouseArchive.builder().url(clickHouseUrl())
        .table(TestDatabase.uniqueName("no_such_table")).build();
    OutboxArchiver archiver = OutboxArchiver.builder().store(store).batchSize(4)
        .sink(JsonLinesArchive.builder().directory(dir).build()).sink(missing).build();

    assertThatThrownBy(() -> archiver.archiveAndPurge(Duration.ofDays(7)))
        .isInstanceOf(ArchiveException.class).hasMessageContaining("no_such_table");

    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, (long) old.size() + 2);
  }

  @ParameterizedTest
  @MethodSource("databases")
  void unwritableDirectoryPurgesNothing(TestDatabase db) throws Exception {
    use(db);
    List<OutboxEvent> old = dispatchedHistory(6);
    Path dir = tmp.resolve("gone");
    JsonLinesArchive json = JsonLinesArchive.builder().directory(dir).build();
    Files.delete(dir);
    Files.writeString(dir, "a file where the directory was");
    OutboxArchiver archiver = OutboxArchiver.builder().store(store).sink(json).build();

    assertThatThrownBy(() -> archiver.archiveAndPurge(Duration.ofDays(7)))
        .isInstanceOf(ArchiveException.class).hasMessageContaining("gone");

    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, (long) old.size() + 2);
  }

  /** Retention zero archives every event dispatched so far, the fresh ones too, and leaves the pending ones. */
  @ParameterizedTest
  @MethodSource("databases")
  void zeroRetentionArchivesEverythingDispatchedSoFar(TestDatabase db) throws Exception {
    use(db);
    List<OutboxEvent> old = dispatchedHistory(4);
    OutboxArchiver archiver = OutboxArchiver.builder().store(store)
        .sink(JsonLinesArchive.builder().directory(tmp.resolve("now")).build()).build();

    assertThat(archiver.archiveAndPurge(Duration.ZERO)).isEqualTo(new ArchiveResult(old.size() + 2, old.size() + 2, 1));

    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 0L).containsEntry(OutboxStatus.PENDING, 3L);
    assertThatThrownBy(() -> archiver.archiveAndPurge(Duration.ofSeconds(-1)))
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("retention must be >= 0, was PT-1S: Duration.ZERO takes everything up to now");
  }

  /**
   * A crash after the archive write and before the delete, simulated by a second sink that fails once:
   * the rerun archives the page again. Nothing is lost, the archive holds duplicates, and the replay order
   * is deterministic with each duplicate next to its twin.
   */
  @ParameterizedTest
  @MethodSource("databases")
  void rerunAfterCrashBetweenWriteAndPurgeDuplicatesButLosesNothing(TestDatabase db) throws Exception {
    use(db);
    List<OutboxEvent> old = dispatchedHistory(12);
    Path dir = tmp.resolve("crash");
    AtomicBoolean crash = new AtomicBoolean(true);
    ArchiveSink crashOnce = events -> {
      if (crash.getAndSet(false)) {
        throw new ArchiveException("simulated crash after the JSON file was written");
      }
    };
    OutboxArchiver archiver = OutboxArchiver.builder().store(store).batchSize(5)
        .sink(JsonLinesArchive.builder().directory(dir).build()).sink(crashOnce).build();

    assertThatThrownBy(() -> archiver.archiveAndPurge(Duration.ofDays(7))).isInstanceOf(ArchiveException.class);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 14L);
    assertThat(archiveFiles(dir)).hasSize(1);

    assertThat(archiver.archiveAndPurge(Duration.ofDays(7))).isEqualTo(new ArchiveResult(12, 12, 3));
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 2L);

    Path all = concatenate(archiveFiles(dir), tmp.resolve("crash.jsonl.gz"));
    List<ArchivedEvent> first = replay(JsonArchiveSource.of(all), TOPIC_A);
    List<ArchivedEvent> second = replay(JsonArchiveSource.of(all), TOPIC_A);
    assertThat(first).isEqualTo(second);
    long expectedA = old.stream().filter(e -> e.topic().equals(TOPIC_A)).count();
    long duplicatedA = first.size() - expectedA;
    assertThat(duplicatedA).isPositive(); // the first page (5 events, both topics) was archived twice
    assertThat(first).isSortedAccordingTo(ArchiveOrder.EVENTS);
    List<ArchivedEvent> distinct = first.stream().distinct().toList();
    assertSameEvents(distinct, old, TOPIC_A, false);
  }

  // ------------------------------------------------------------------ helpers

  /**
   * {@code n} events dispatched 10 days ago (alternating topics, one transaction each), plus 3 pending and
   * 2 freshly dispatched ones the archiver must leave alone; returns the old ones as stored.
   */
  private List<OutboxEvent> dispatchedHistory(int n) {
    List<OutboxEvent> old = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      OutboxEvent e = OutboxEvent.builder().aggregate(i % 3 == 0 ? "customer" : "order", "o-" + (i % 4))
          .topic(i % 2 == 0 ? TOPIC_A : TOPIC_B)
          .payload(String.format(PAYLOADS[i % PAYLOADS.length], i))
          .header("tenant", "acme-" + i).header("trace", "t" + i)
          .schemaVersion(1 + i % 3)
          .traceParent(i % 2 == 0 ? String.format("00-%032x-%016x-01", i + 1, i + 7) : null)
          .occurredAt(i % 4 == 1 ? Instant.parse("2026-01-02T03:04:05.123456Z").plusSeconds(i) : null)
          .build();
      append(List.of(e));
      old.add(e);
    }
    dispatchAll();
    append(List.of(event("p1"), event("p2"), event("p3")));
    StoredTimes.shift(dataSource, store, Duration.ofDays(10));
    List<OutboxEvent> fresh = List.of(event("f1"), event("f2"));
    append(fresh);
    assertThat(store.markDispatched(fresh.stream().map(e -> store.find(e.id()).orElseThrow()).toList())).hasSize(2);
    return old.stream().map(e -> store.find(e.id()).orElseThrow()).toList();
  }

  private static OutboxEvent event(String key) {
    return OutboxEvent.builder().aggregate("order", key).topic(TOPIC_A).payload("{\"k\":\"" + key + "\"}").build();
  }

  private void append(List<OutboxEvent> events) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private void dispatchAll() {
    OutboxDispatcher d = OutboxDispatcher.builder().store(store).useClaim(true).batchSize(500)
        .dispatchFn(e -> { }).build();
    while (!d.dispatchOnce().isEmpty()) {
      // drain
    }
  }

  private static List<ArchivedEvent> replay(ReplaySource source, String topic) throws InterruptedException {
    List<ArchivedEvent> out = new ArrayList<>();
    ReplaySink collect = new ReplaySink() {
      @Override
      public void publish(List<ReplayMessage> messages) {
        messages.forEach(m -> out.add(m.event()));
      }

      @Override
      public boolean isDryRun() {
        return true;
      }
    };
    ReplayResult r = EventReplay.builder().source(source).topic(topic)
        .from(Instant.parse("2000-01-01T00:00:00Z")).to(Instant.now().plus(1, ChronoUnit.DAYS))
        .sink(collect).build().run();
    assertThat(r.published()).isEqualTo(out.size());
    return out;
  }

  /** The replayed events are exactly the archived ones of {@code topic}, in replay order. */
  private static void assertSameEvents(List<ArchivedEvent> replayed, List<OutboxEvent> stored, String topic,
      boolean wholeSeconds) throws IOException {
    List<ArchivedEvent> expected = new ArrayList<>();
    for (OutboxEvent e : stored) {
      if (e.topic().equals(topic)) {
        Instant created = wholeSeconds ? e.createdAt().truncatedTo(ChronoUnit.SECONDS) : e.createdAt();
        expected.add(new ArchivedEvent(e.id().toString(), e.topic(), e.aggregateType(), e.aggregateId(), created,
            JsonText.compact(e.payload()), e.headers()));
      }
    }
    expected.sort(ArchiveOrder.EVENTS);
    assertThat(expected).isNotEmpty();
    assertThat(replayed).hasSize(expected.size());
    for (int i = 0; i < expected.size(); i++) {
      ArchivedEvent a = replayed.get(i);
      ArchivedEvent b = expected.get(i);
      assertThat(a.id()).isEqualTo(b.id());
      assertThat(a.topic()).isEqualTo(b.topic());
      assertThat(a.aggregateType()).isEqualTo(b.aggregateType());
      assertThat(a.aggregateId()).isEqualTo(b.aggregateId());
      assertThat(a.createdAt()).isEqualTo(b.createdAt());
      assertThat(a.payload()).isEqualTo(b.payload());
      assertThat(a.headers()).isEqualTo(b.headers());
      OutboxEvent original = stored.stream().filter(e -> e.id().toString().equals(a.id())).findFirst().orElseThrow();
      assertThat(original.sequence()).isPositive();
      Instant occurred = wholeSeconds ? original.occurredAt().truncatedTo(ChronoUnit.SECONDS) : original.occurredAt();
      assertThat(a.envelope()).isEqualTo(new ArchivedEvent.Envelope(original.sequence(), original.schemaVersion(),
          occurred, original.traceParent()));
      // what the replay sends: the envelope headers the dispatcher sent
      Map<String, String> sent = OutboxHeaders.of(original);
      Map<String, String> resent = ReplayMessage.of(a, "batch-1").headers();
      for (String name : List.of(OutboxHeaders.SEQUENCE, OutboxHeaders.SCHEMA_VERSION, OutboxHeaders.TRACEPARENT)) {
        assertThat(resent.get(name)).as(name).isEqualTo(sent.get(name));
      }
      assertThat(resent.get(OutboxHeaders.OCCURRED_AT)).isEqualTo(OutboxHeaders.iso(occurred));
    }
  }

  private static List<Path> archiveFiles(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(f -> f.getFileName().toString().endsWith(".jsonl.gz")).sorted().toList();
    }
  }

  /** {@code cat *.jsonl.gz > all.jsonl.gz}: gzip members concatenate into one readable archive. */
  private static Path concatenate(List<Path> files, Path target) throws IOException {
    try (OutputStream out = Files.newOutputStream(target)) {
      for (Path f : files) {
        try (InputStream in = Files.newInputStream(f)) {
          in.transferTo(out);
        }
      }
    }
    return target;
  }

  // ------------------------------------------------------------------ ClickHouse

  private static String clickHouseUrl() {
    String url = System.getenv("MIC_TEST_CLICKHOUSE_URL");
    return url == null || url.isBlank() ? "http://127.0.0.1:8123" : url;
  }

  private static void requireClickHouse() {
    try {
      HttpResponse<String> r = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build().send(
          HttpRequest.newBuilder(URI.create(clickHouseUrl() + "/ping")).timeout(Duration.ofSeconds(3)).build(),
          HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() == 200) {
        return;
      }
      unreachable("HTTP " + r.statusCode());
    } catch (IOException e) {
      unreachable(e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private static void unreachable(String why) {
    String message = "ClickHouse for tests is unreachable at " + clickHouseUrl() + " (" + why
        + "): set MIC_TEST_CLICKHOUSE_URL or start clickhouse-server";
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      throw new IllegalStateException(message);
    }
    Assumptions.abort(message);
  }

  private String clickHouseTable() {
    String t = TestDatabase.uniqueName("outbox_archive_test");
    clickHouseTables.add(t);
    return t;
  }

  private static long clickHouseCount(String table) throws IOException, InterruptedException {
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(clickHouseUrl() + "/"))
        .POST(HttpRequest.BodyPublishers.ofString("SELECT count() FROM " + table)).build(),
        HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
    return Long.parseLong(r.body().trim());
  }

  private static void clickHouse(String sql) throws IOException, InterruptedException {
    HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(clickHouseUrl() + "/"))
        .POST(HttpRequest.BodyPublishers.ofString(sql)).build(), HttpResponse.BodyHandlers.ofString());
    assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
  }
}
