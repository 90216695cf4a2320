package io.mic.replay;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.nats.client.Connection;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.StreamConfiguration;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The command over a real ClickHouse archive table, read through the HTTP interface. */
class ClickHouseReplayTest {
  private static final String TOPIC = "order.created";
  private final List<String> tables = new ArrayList<>();

  @BeforeEach
  void requireClickHouse() throws Exception {
    TestServices.requireClickHouse();
  }

  @AfterEach
  void dropTables() throws Exception {
    for (String table : tables) {
      TestServices.clickHouse("DROP TABLE IF EXISTS " + table);
    }
  }

  private String createTable(String idType, String createdAtType) throws Exception {
    String table = TestServices.uniqueName();
    tables.add(table);
    TestServices.clickHouse("CREATE TABLE " + table + " (id " + idType + ", topic String, aggregate_type String,"
        + " aggregate_id String, created_at " + createdAtType + ", payload String, headers String)"
        + " ENGINE = MergeTree ORDER BY (created_at, id)");
    return table;
  }

  /** Inserts a row; {@code createdAt} goes in as an epoch expression so no time zone can shift it. */
  private static void insert(String table, String id, String topic, String createdAtExpression, String payload,
      String headers) throws Exception {
    TestServices.clickHouse("INSERT INTO " + table + " (id, topic, aggregate_type, aggregate_id, created_at,"
        + " payload, headers) VALUES (" + quote(id) + ", " + quote(topic) + ", 'order', '42', "
        + createdAtExpression + ", " + quote(payload) + ", " + quote(headers) + ")");
  }

  private static String at(String iso) {
    return "toDateTime(" + Instant.parse(iso).getEpochSecond() + ")";
  }

  private static String quote(String s) {
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }

  private static Cli dryRun(String table, String from, String to, String... more) {
    List<String> args = new ArrayList<>(List.of("--from-clickhouse", TestServices.clickHouseUrl(),
        "--clickhouse-table", table, "--topic", TOPIC, "--from", from, "--to", to, "--batch-id", "ch"));
    args.addAll(List.of(more));
    return Cli.run(args.toArray(String[]::new));
  }

  @Test
  void aDateTimeTableIsFilteredAndOrderedInClickHouse() throws Exception {
    String table = createTable("String", "DateTime('UTC')");
    insert(table, "late", TOPIC, at("2026-09-29T10:00:01Z"), "{}", "{}");
    insert(table, "b", TOPIC, at("2026-09-29T08:00:00Z"), "{\"n\":2}", "{}");
    insert(table, "last", TOPIC, at("2026-09-29T10:00:00Z"), "{}", "");
    insert(table, "a", TOPIC, at("2026-09-29T08:00:00Z"), "{\"n\":1}", "{\"tenant\":\"acme\"}");
    insert(table, "early", TOPIC, at("2026-09-29T07:59:59Z"), "{}", "{}");
    insert(table, "other", "order.cancelled", at("2026-09-29T09:00:00Z"), "{}", "{}");

    Cli cli = dryRun(table, "2026-09-29T08:00:00Z", "2026-09-29T10:00:00Z");

    assertThat(cli.exitCode()).as(cli.stderr()).isZero();
    assertThat(cli.ids()).containsExactly("a", "b", "last");
    assertThat(cli.lines().get(0)).isEqualTo("{\"original_id\":\"a\",\"topic\":\"order.created\","
        + "\"created_at\":\"2026-09-29T08:00:00.000Z\",\"aggregate_type\":\"order\","
        + "\"aggregate_id\":\"42\",\"batch_id\":\"ch\",\"payload_bytes\":7}");
    assertThat(cli.stderr()).startsWith("dry run: 3 events selected from 3 records of ClickHouse table " + table);
  }

  @Test
  void wholeSecondColumnsRoundTheRangeInwards() throws Exception {
    String table = createTable("String", "DateTime('UTC')");
    insert(table, "s0", TOPIC, at("2026-09-29T08:00:00Z"), "{}", "{}");
    insert(table, "s1", TOPIC, at("2026-09-29T08:00:01Z"), "{}", "{}");
    insert(table, "s2", TOPIC, at("2026-09-29T08:00:02Z"), "{}", "{}");

    assertThat(dryRun(table, "2026-09-29T08:00:00.001Z", "2026-09-29T08:00:01.999Z").ids()).containsExactly("s1");
    assertThat(dryRun(table, "2026-09-29T08:00:00Z", "2026-09-29T08:00:02Z").ids()).containsExactly("s0", "s1", "s2");
  }

  @Test
  void dateTimeColumnsInAnyTimeZoneComeOutInUtc() throws Exception {
    String tokyo = createTable("String", "DateTime('Asia/Tokyo')");
    String plain = createTable("String", "DateTime");
    insert(tokyo, "t", TOPIC, at("2026-09-29T08:00:00Z"), "{}", "{}");
    insert(plain, "p", TOPIC, at("2026-09-29T08:00:00Z"), "{}", "{}");

    Cli fromTokyo = dryRun(tokyo, "2026-09-29T17:00:00+09:00", "2026-09-29T17:00:00+09:00");
    Cli fromPlain = dryRun(plain, "2026-09-29T08:00:00Z", "2026-09-29T08:00:00Z");

    assertThat(fromTokyo.ids()).containsExactly("t");
    assertThat(fromTokyo.lines().get(0)).contains("\"created_at\":\"2026-09-29T08:00:00.000Z\"");
    assertThat(fromPlain.ids()).containsExactly("p");
    assertThat(fromPlain.lines().get(0)).contains("\"created_at\":\"2026-09-29T08:00:00.000Z\"");
  }

  @Test
  void uuidIdsTiedOnCreatedAtAreOrderedByTheirText() throws Exception {
    String table = createTable("UUID", "DateTime('UTC')");
    String high = "ffffffff-0000-4000-8000-000000000001";
    String low = "00000000-ffff-4000-8000-000000000002";
    String middle = "7fffffff-ffff-4000-8000-ffffffffffff";
    for (String id : List.of(high, low, middle)) {
      TestServices.clickHouse("INSERT INTO " + table + " (id, topic, aggregate_type, aggregate_id, created_at,"
          + " payload, headers) VALUES (toUUID('" + id + "'), 'order.created', 'order', '42', "
          + at("2026-09-29T08:00:00Z") + ", '{}', '{}')");
    }

    assertThat(dryRun(table, "2026-09-29T08:00:00Z", "2026-09-29T08:00:00Z").ids()).containsExactly(low, middle, high);
  }

  @Test
  void aDateTime64TableKeepsMilliseconds() throws Exception {
    String probe = TestServices.clickHouse("SELECT count() FROM system.data_type_families WHERE name = 'DateTime64'");
    Assumptions.assumeTrue(probe.trim().equals("1"), "this ClickHouse server ("
        + TestServices.clickHouse("SELECT version()").trim() + ") has no DateTime64 type (added in 20.1)");
    String table = createTable("String", "DateTime64(3, 'UTC')");
    for (String[] row : new String[][] {{"before", "07:59:59.999"}, {"first", "08:00:00.000"},
        {"tie-b", "08:00:00.500"}, {"tie-a", "08:00:00.500"}, {"last", "10:00:00.000"}, {"after", "10:00:00.001"}}) {
      insert(table, row[0], TOPIC, "toDateTime64('2026-09-29 " + row[1] + "', 3, 'UTC')", "{}", "{}");
    }

    Cli cli = dryRun(table, "2026-09-29T08:00:00Z", "2026-09-29T10:00:00Z");

    assertThat(cli.ids()).containsExactly("first", "tie-a", "tie-b", "last");
    assertThat(cli.lines().get(1)).contains("\"created_at\":\"2026-09-29T08:00:00.500Z\"");
  }

  /** Rows stream from ClickHouse; a first pass checks every one, so a bad row after 1,500 good ones publishes none. */
  @Test
  void aRowNatsCannotTakeAfter1500GoodOnesIsExit2WithNothingPublished() throws Exception {
    String table = createTable("String", "DateTime('UTC')");
    String stream = TestServices.uniqueName();
    String topic = stream + ".order.created";
    StringBuilder values = new StringBuilder();
    for (int i = 0; i < 1600; i++) {
      values.append(i == 0 ? "" : ", ").append("('e").append(String.format("%04d", i)).append("', '").append(topic)
          .append("', 'order', '").append(i == 1500 ? "Zürich" : "42").append("', toDateTime(")
          .append(Instant.parse("2026-09-29T08:00:00Z").getEpochSecond() + i).append("), '{}', '')");
    }
    TestServices.clickHouse("INSERT INTO " + table + " (id, topic, aggregate_type, aggregate_id, created_at, payload,"
        + " headers) VALUES " + values);
    try (Connection nats = TestServices.nats()) {
      nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>").build());
      try {
        Cli cli = Cli.run("--from-clickhouse", TestServices.clickHouseUrl(), "--clickhouse-table", table,
            "--topic", topic, "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T09:00:00Z",
            "--to-nats", TestServices.natsUrl(), "--nats-stream", stream, "--batch-id", "from-ch");

        assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(2);
        assertThat(cli.stderr()).isEqualTo("mic-events-replay: nothing was published: ClickHouse table " + table
            + " row 1501: event e1500 cannot go to NATS: header x-aggregate-id has a character"
            + " NATS headers cannot carry at index 1 (U+00FC): header values are printable ASCII\n");
        assertThat(nats.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount()).isZero();
      } finally {
        nats.jetStreamManagement().deleteStream(stream);
      }
    }
  }

  @Test
  void aClickHouseArchiveIsPublishedToJetStreamWithItsPayloadAndHeaders() throws Exception {
    String table = createTable("String", "DateTime('UTC')");
    String stream = TestServices.uniqueName();
    String topic = stream + ".order.created";
    insert(table, "e1", topic, at("2026-09-29T08:00:00Z"),
        "{ \"city\": \"Zürich\", \"quote\": \"it's\", \"n\": 1.0 }", "{\"tenant\":\"acme\"}");
    try (Connection nats = TestServices.nats()) {
      nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>").build());
      try {
        Cli cli = Cli.run("--from-clickhouse", TestServices.clickHouseUrl(), "--clickhouse-table", table,
            "--topic", topic, "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T08:00:00Z",
            "--to-nats", TestServices.natsUrl(), "--nats-stream", stream, "--batch-id", "from-ch");

        assertThat(cli.exitCode()).as(cli.stderr()).isZero();
        JetStreamSubscription sub = nats.jetStream().subscribe(stream + ".>",
            PullSubscribeOptions.builder().stream(stream).build());
        List<Message> messages = sub.fetch(1, Duration.ofSeconds(5));
        assertThat(messages).hasSize(1);
        Message m = messages.get(0);
        assertThat(new String(m.getData(), UTF_8)).isEqualTo("{\"city\":\"Zürich\",\"quote\":\"it's\",\"n\":1.0}");
        assertThat(m.getHeaders().getFirst("tenant")).isEqualTo("acme");
        assertThat(m.getHeaders().getFirst("Nats-Msg-Id")).isEqualTo("e1:replay:from-ch");
        assertThat(m.getHeaders().getFirst("x-original-event-id")).isEqualTo("e1");
      } finally {
        nats.jetStreamManagement().deleteStream(stream);
      }
    }
  }

  @Test
  void tableAndServerProblemsExitWith2AndSayWhatIsWrong() throws Exception {
    String missing = TestServices.uniqueName();
    Cli noTable = dryRun(missing, "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z");
    assertThat(noTable.exitCode()).isEqualTo(2);
    assertThat(noTable.stderr()).startsWith("mic-events-replay: cannot read the archive: ClickHouse at "
        + TestServices.clickHouseUrl() + "/ answered HTTP 404 to the description of table " + missing + ": Code: 60");

    Cli injection = dryRun("outbox; DROP TABLE x", "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z");
    assertThat(injection.exitCode()).isEqualTo(2);
    assertThat(injection.stderr()).startsWith("mic-events-replay: --clickhouse-table: table 'outbox; DROP TABLE x'"
        + " is not a valid table name");

    String noPayload = TestServices.uniqueName();
    tables.add(noPayload);
    TestServices.clickHouse("CREATE TABLE " + noPayload + " (id String, topic String, created_at DateTime)"
        + " ENGINE = MergeTree ORDER BY created_at");
    assertThat(dryRun(noPayload, "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z").stderr())
        .startsWith("mic-events-replay: cannot read the archive: ClickHouse table " + noPayload
            + " has no column 'payload'");

    Cli wrongUser = dryRun(missing, "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z", "--clickhouse-user", "nobody",
        "--clickhouse-password", "pa55word");
    assertThat(wrongUser.exitCode()).isEqualTo(2);
    assertThat(wrongUser.stderr()).contains("refused the credentials of user 'nobody'").doesNotContain("pa55word");

    Cli down = Cli.run("--from-clickhouse", "http://127.0.0.1:1", "--topic", TOPIC, "--from",
        "2026-09-29T08:00:00Z", "--to", "2026-09-29T09:00:00Z");
    assertThat(down.exitCode()).isEqualTo(2);
    assertThat(down.stderr()).startsWith("mic-events-replay: cannot read the archive: ClickHouse is not reachable at"
        + " http://127.0.0.1:1/");

    Cli credentialsInUrl = Cli.run("--from-clickhouse", "http://admin:secret@127.0.0.1:8123", "--topic", TOPIC,
        "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T09:00:00Z");
    assertThat(credentialsInUrl.exitCode()).isEqualTo(2);
    assertThat(credentialsInUrl.stderr()).startsWith("mic-events-replay: --from-clickhouse: url must not contain"
        + " credentials").doesNotContain("secret");
  }
}
