package io.mic.replay;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.archive.ArchivedEvent;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command over JSON archives, as a dry run: selection, order, formats and input errors. */
class JsonArchiveReplayTest {
  @TempDir
  Path dir;

  private static String record(String id, String topic, String createdAt) {
    return "{\"id\":\"" + id + "\",\"topic\":\"" + topic + "\",\"aggregate_type\":\"order\",\"aggregate_id\":\"42\","
        + "\"created_at\":\"" + createdAt + "\",\"payload\":{\"id\":\"" + id + "\"},\"headers\":{\"tenant\":\"acme\"}}";
  }

  private Path archive(String name, String... lines) throws IOException {
    Path file = dir.resolve(name);
    Files.writeString(file, String.join("\n", lines) + "\n", UTF_8);
    return file;
  }

  private static Cli dryRun(Path archive, String from, String to, String... more) {
    String[] base = {"--from-json", archive.toString(), "--topic", "order.created", "--from", from, "--to", to,
        "--batch-id", "b1"};
    String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(base), java.util.Arrays.stream(more))
        .toArray(String[]::new);
    return Cli.run(args);
  }

  @Test
  void aDryRunPrintsOneJsonLinePerEventAndASummaryOnStderr() throws IOException {
    Path file = archive("a.jsonl", record("e1", "order.created", "2026-09-29T08:00:00.123Z"));

    Cli cli = dryRun(file, "2026-09-29T08:00:00Z", "2026-09-29T10:00:00Z");

    assertThat(cli.exitCode()).isZero();
    // the same for every broker: no NATS subject or Nats-Msg-Id for a replay that may go to Kafka or RabbitMQ
    assertThat(cli.lines()).containsExactly("{\"original_id\":\"e1\",\"topic\":\"order.created\","
        + "\"created_at\":\"2026-09-29T08:00:00.123Z\",\"aggregate_type\":\"order\","
        + "\"aggregate_id\":\"42\",\"batch_id\":\"b1\",\"payload_bytes\":11}");
    assertThat(cli.stderr()).startsWith("dry run: 1 events selected from 1 records of JSON archive " + file
        + " (topic order.created, 2026-09-29T08:00:00.000Z .. 2026-09-29T10:00:00.000Z); batch id b1;"
        + " nothing was published (");
  }

  @Test
  void tiesOnCreatedAtAreOrderedById() throws IOException {
    Path file = archive("ties.jsonl",
        record("c", "order.created", "2026-09-29T08:00:00Z"),
        record("a", "order.created", "2026-09-29T08:00:00.000Z"),
        record("b", "order.created", "2026-09-29T10:00:00+02:00"),   // the same instant
        record("0", "order.created", "2026-09-29T08:00:00.001Z"));

    Cli cli = dryRun(file, "2026-09-29T00:00:00Z", "2026-09-30T00:00:00Z");

    assertThat(cli.ids()).containsExactly("a", "b", "c", "0");
  }

  @Test
  void bothBoundsAreInclusiveToTheMillisecond() throws IOException {
    Path file = archive("bounds.jsonl",
        record("before", "order.created", "2026-09-29T07:59:59.999Z"),
        record("first", "order.created", "2026-09-29T08:00:00.000Z"),
        record("last", "order.created", "2026-09-29T10:00:00.000Z"),
        record("after", "order.created", "2026-09-29T10:00:00.001Z"));

    Cli cli = dryRun(file, "2026-09-29T08:00:00Z", "2026-09-29T10:00:00Z");

    assertThat(cli.ids()).containsExactly("first", "last");
  }

  @Test
  void offsetsAreNormalisedToUtcInTheArchiveAndTheArguments() throws IOException {
    Path file = archive("offsets.jsonl",
        record("tokyo", "order.created", "2026-09-29T17:00:00.250+09:00"),   // 08:00:00.250Z
        record("newyork", "order.created", "2026-09-29T04:00:00-04:00"),     // 08:00:00Z
        record("kolkata", "order.created", "2026-09-29T13:30:00.5+0530"),    // 08:00:00.500Z
        record("late", "order.created", "2026-09-29T10:00:01+02:00"));       // 08:00:01Z

    Cli cli = dryRun(file, "2026-09-29T10:00:00+02:00", "2026-09-29T04:00:00.5-04:00");

    assertThat(cli.ids()).containsExactly("newyork", "tokyo", "kolkata");
    assertThat(cli.lines().get(1)).contains("\"created_at\":\"2026-09-29T08:00:00.250Z\"");
    assertThat(cli.lines().get(2)).contains("\"created_at\":\"2026-09-29T08:00:00.500Z\"");
  }

  @Test
  void otherTopicsAreLeftOut() throws IOException {
    Path file = archive("topics.jsonl",
        record("x", "order.created.v2", "2026-09-29T08:00:00Z"),
        record("y", "order", "2026-09-29T08:00:00Z"),
        record("z", "order.created", "2026-09-29T08:00:00Z"),
        record("w", "ORDER.CREATED", "2026-09-29T08:00:00Z"));

    Cli cli = dryRun(file, "2026-09-29T08:00:00Z", "2026-09-29T08:00:00Z");

    assertThat(cli.ids()).containsExactly("z");
    assertThat(cli.stderr()).startsWith("dry run: 1 events selected from 4 records");
  }

  @Test
  void aJsonArrayArchiveAndAGzipArchiveReplayAlike() throws IOException {
    Path array = dir.resolve("array.json");
    Files.writeString(array, "[\n" + record("b", "order.created", "2026-09-29T08:00:01Z") + ",\n"
        + record("a", "order.created", "2026-09-29T08:00:00Z") + "\n]\n", UTF_8);
    Path gzip = dir.resolve("archive.jsonl.gz");
    try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(gzip))) {
      out.write((record("b", "order.created", "2026-09-29T08:00:01Z") + "\n"
          + record("a", "order.created", "2026-09-29T08:00:00Z") + "\n").getBytes(UTF_8));
    }

    Cli fromArray = dryRun(array, "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z");
    Cli fromGzip = dryRun(gzip, "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z");

    assertThat(fromArray.ids()).containsExactly("a", "b");
    assertThat(fromGzip.stdout()).isEqualTo(fromArray.stdout());
  }

  @Test
  void aMalformedLineStopsWithExit2NamingTheFileAndTheLine() throws IOException {
    Path file = archive("bad.jsonl",
        record("a", "order.created", "2026-09-29T08:00:00Z"),
        "",
        "{\"id\":\"b\",\"topic\":\"order.created\",,}");

    Cli cli = dryRun(file, "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stdout()).isEmpty();
    assertThat(cli.stderr()).startsWith("mic-events-replay: cannot read the archive: " + file
        + " line 3: not valid JSON: Unexpected character (',' (code 44)): was expecting double-quote to start"
        + " field name");
  }

  @Test
  void recordProblemsNameTheFieldAndTheLine() throws IOException {
    assertThat(dryRun(archive("m.jsonl", record("a", "order.created", "2026-09-29T08:00:00Z"),
        "{\"id\":\"b\",\"topic\":\"order.created\",\"payload\":{}}"), "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z")
        .stderr()).isEqualTo("mic-events-replay: cannot read the archive: " + dir.resolve("m.jsonl")
        + " line 2: field 'created_at' is missing\n");
    assertThat(dryRun(archive("o.jsonl", record("a", "order.created", "2026-09-29T08:00:00")),
        "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z").stderr())
        .isEqualTo("mic-events-replay: cannot read the archive: " + dir.resolve("o.jsonl") + " line 1: field"
            + " 'created_at': '2026-09-29T08:00:00' has no offset: add Z or an offset such as +02:00, e.g."
            + " 2026-09-29T08:00:00Z\n");
    assertThat(dryRun(archive("h.jsonl", "{\"id\":\"a\",\"topic\":\"order.created\",\"created_at\":\"2026-09-29T08:00:00Z\","
        + "\"payload\":1,\"headers\":{\"n\":1}}"), "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z").stderr())
        .isEqualTo("mic-events-replay: cannot read the archive: " + dir.resolve("h.jsonl")
            + " line 1: header 'n' must be a string, found a number\n");
    assertThat(dryRun(archive("u.jsonl", "{\"id\":\"a\",\"topic\":\"order.created\",\"created_at\":\"2026-09-29T08:00:00Z\","
        + "\"payload\":1,\"headers\":{\"city\":\"Zürich\"}}"), "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z").stderr())
        .isEqualTo("mic-events-replay: cannot read the archive: " + dir.resolve("u.jsonl")
            + " line 1: header 'city' has a character NATS headers cannot carry at index 1 (U+00FC): header values"
            + " are printable ASCII\n");
  }

  @Test
  void anErrorInsideAJsonArrayNamesItsLine() throws IOException {
    Path file = dir.resolve("bad-array.json");
    Files.writeString(file, "[\n" + record("a", "order.created", "2026-09-29T08:00:00Z") + ",\n"
        + "{\"id\":\"b\",\"topic\":\"order.created\",\"created_at\":\"yesterday\",\"payload\":{}}\n]", UTF_8);

    Cli cli = dryRun(file, "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stderr()).startsWith("mic-events-replay: cannot read the archive: " + file
        + " line 3: field 'created_at': 'yesterday' is not an ISO-8601 date-time");
  }

  @Test
  void invalidUtf8IsReportedWithItsLine() throws IOException {
    Path file = dir.resolve("latin1.jsonl");
    byte[] good = (record("a", "order.created", "2026-09-29T08:00:00Z") + "\n").getBytes(UTF_8);
    byte[] bad = "{\"id\":\"b\",\"topic\":\"caf\u00e9\"}\n".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
    Files.write(file, concat(good, good, bad));

    Cli cli = dryRun(file, "2026-09-29T08:00:00Z", "2026-09-29T09:00:00Z");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: cannot read the archive: " + file
        + " line 3: not valid UTF-8\n");
  }

  @Test
  void utf8PayloadsAreKeptInMeaningAndMadeCompact() throws IOException {
    Path file = archive("utf8.jsonl", "{\"id\":\"u\",\"topic\":\"order.created\",\"created_at\":\"2026-09-29T08:00:00Z\","
        + "\"payload\": { \"city\" : \"Z\\u00fcrich\", \"jp\": \"日本語\", \"emoji\": \"\uD83D\uDE00\","
        + " \"big\": 12345678901234567890.10, \"tab\": \"a\\tb\" } }");
    ReplaySource source = JsonArchiveSource.of(file);

    try (ReplayCursor cursor = source.open(new ReplayQuery("order.created",
        java.time.Instant.parse("2026-09-29T08:00:00Z"), java.time.Instant.parse("2026-09-29T08:00:00Z")),
        ReplayProgress.NONE)) {
      ArchivedEvent e = cursor.next();
      assertThat(e.payload()).isEqualTo("{\"city\":\"Zürich\",\"jp\":\"日本語\",\"emoji\":\"\uD83D\uDE00\","
          + "\"big\":12345678901234567890.10,\"tab\":\"a\\tb\"}");
      assertThat(cursor.next()).isNull();
    }
  }

  @Test
  void badArgumentsExitWith2AndNameTheArgument() throws IOException {
    Path file = archive("a.jsonl", record("a", "order.created", "2026-09-29T08:00:00Z"));
    String f = file.toString();

    assertThat(Cli.run("--from-json", f, "--topic", "order.created", "--from", "2026-09-29T10:00:00Z", "--to",
        "2026-09-29T08:00:00Z")).satisfies(c -> {
          assertThat(c.exitCode()).isEqualTo(2);
          assertThat(c.stderr()).startsWith("mic-events-replay: --to: to (2026-09-29T08:00:00Z) is before from"
              + " (2026-09-29T10:00:00Z)");
        });
    assertThat(Cli.run("--from-json", f, "--topic", "order.*", "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T09:00:00Z").stderr()).startsWith("mic-events-replay: --topic: topic must be letters");
    assertThat(Cli.run("--from-json", f, "--topic", "t", "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T09:00:00Z", "--batch-id", "a b").stderr())
        .startsWith("mic-events-replay: --batch-id: batchId must be 1 to 64 letters");
    assertThat(Cli.run("--from-json", f, "--topic", "t", "--from", "nine o'clock", "--to", "2026-09-29T09:00:00Z")
        .stderr()).startsWith("mic-events-replay: Invalid value for option '--from': 'nine o'clock' is not an"
            + " ISO-8601 date-time with an offset");
    assertThat(Cli.run("--from-json", f, "--topic", "t", "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T09:00:00Z", "--nats-stream", "S").stderr())
        .startsWith("mic-events-replay: --nats-stream needs --to-nats URL");
    assertThat(Cli.run("--from-json", f, "--topic", "t", "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T09:00:00Z", "--clickhouse-table", "x").stderr())
        .startsWith("mic-events-replay: --clickhouse-table needs --from-clickhouse");
    assertThat(Cli.run("--topic", "t", "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T09:00:00Z"))
        .satisfies(c -> {
          assertThat(c.exitCode()).isEqualTo(2);
          assertThat(c.stderr()).startsWith("mic-events-replay: Error: Missing required argument (specify one of"
              + " these): (--from-json=PATH | --from-clickhouse=URL)");
        });
    assertThat(Cli.run("--from-json", dir.resolve("missing.jsonl").toString(), "--topic", "t", "--from",
        "2026-09-29T08:00:00Z", "--to", "2026-09-29T09:00:00Z")).satisfies(c -> {
          assertThat(c.exitCode()).isEqualTo(2);
          assertThat(c.stderr()).isEqualTo("mic-events-replay: cannot read the archive: "
              + dir.resolve("missing.jsonl") + ": no such file\n");
        });
  }

  @Test
  void anArchiveBiggerThanTheSortMemoryIsReplayedInOrder() throws IOException, InterruptedException {
    // 3 MiB of records in reverse order with a 1 MiB sort budget: several runs are spilled and merged
    int count = 6000;
    StringBuilder text = new StringBuilder();
    for (int i = count - 1; i >= 0; i--) {
      text.append(record(String.format("id-%05d", i), i % 3 == 0 ? "other" : "order.created",
          java.time.Instant.parse("2026-09-29T08:00:00Z").plusMillis(i / 2).toString())).append('\n');
    }
    Path file = dir.resolve("big.jsonl");
    Files.writeString(file, text, UTF_8);
    Path temp = Files.createDirectory(dir.resolve("sort"));
    JsonArchiveSource source = JsonArchiveSource.builder().path(file).tempDir(temp).sortMemoryBytes(1 << 20).build();
    java.io.StringWriter out = new java.io.StringWriter();

    ReplayResult result = EventReplay.builder().source(source).topic("order.created")
        .from(java.time.Instant.parse("2026-09-29T08:00:00Z")).to(java.time.Instant.parse("2026-09-29T09:00:00Z"))
        .sink(new DryRunSink(out)).batchId("b").build().run();

    List<String> lines = List.of(out.toString().split("\n"));
    List<String> expected = java.util.stream.IntStream.range(0, count).filter(i -> i % 3 != 0)
        .mapToObj(i -> String.format("id-%05d", i)).toList();
    List<String> ids = lines.stream().map(l -> l.substring(16, 24)).toList();
    for (int i = 0; i < Math.min(ids.size(), expected.size()); i++) {
      assertThat(ids.get(i)).as("line %d: %s", i + 1, lines.get(i)).isEqualTo(expected.get(i));
    }
    assertThat(ids).hasSameSizeAs(expected);
    assertThat(result.published()).isEqualTo(4000);
    assertThat(result.recordsRead()).isEqualTo(6000);
    try (var left = Files.list(temp)) {
      assertThat(left).as("sorted runs are deleted").isEmpty();
    }
  }

  private static byte[] concat(byte[]... parts) {
    java.io.ByteArrayOutputStream all = new java.io.ByteArrayOutputStream();
    for (byte[] p : parts) {
      all.writeBytes(p);
    }
    return all.toByteArray();
  }
}
