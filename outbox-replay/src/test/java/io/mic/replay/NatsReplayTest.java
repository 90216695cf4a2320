package io.mic.replay;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.DiscardPolicy;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command publishing to a real JetStream server. */
class NatsReplayTest {
  private static final int KILLED_RUN_EVENTS = 60_000;

  @TempDir
  Path dir;
  private Connection nats;
  private String stream;
  private String topic;

  @BeforeEach
  void connect() throws Exception {
    nats = TestServices.nats();
    stream = TestServices.uniqueName();
    topic = stream + ".order.created";
  }

  @AfterEach
  void cleanUp() throws Exception {
    try {
      nats.jetStreamManagement().deleteStream(stream);
    } catch (JetStreamApiException e) {
      // the test never created it
    }
    nats.close();
  }

  private void createStream(int maxMessageSize) throws IOException, JetStreamApiException {
    StreamConfiguration.Builder config = StreamConfiguration.builder().name(stream).subjects(stream + ".>")
        .duplicateWindow(Duration.ofMinutes(2));
    if (maxMessageSize > 0) {
      config.maximumMessageSize(maxMessageSize);
    }
    nats.jetStreamManagement().addStream(config.build());
  }

  /** A stream that takes {@code maxMessages} messages and refuses the next one: a refusal at publication time. */
  private void createFullStream(int maxMessages) throws IOException, JetStreamApiException {
    nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>")
        .duplicateWindow(Duration.ofMinutes(2)).maxMessages(maxMessages).discardPolicy(DiscardPolicy.New).build());
  }

  private String record(String id, String createdAt, String payload) {
    return "{\"id\":\"" + id + "\",\"topic\":\"" + topic + "\",\"aggregate_type\":\"order\",\"aggregate_id\":\"42\","
        + "\"created_at\":\"" + createdAt + "\",\"payload\":" + payload + ",\"headers\":{\"tenant\":\"acme\"}}";
  }

  private Path archive(String... lines) throws IOException {
    Path file = dir.resolve("archive.jsonl");
    Files.writeString(file, String.join("\n", lines) + "\n", UTF_8);
    return file;
  }

  private Cli replay(Path archive, String batchId, String... more) {
    List<String> args = new ArrayList<>(List.of("--from-json", archive.toString(), "--topic", topic,
        "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T10:00:00Z",
        "--to-nats", TestServices.natsUrl(), "--nats-stream", stream, "--batch-id", batchId));
    args.addAll(List.of(more));
    return Cli.run(args.toArray(String[]::new));
  }

  private long storedCount() throws Exception {
    return nats.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount();
  }

  @Test
  void everyMessageCarriesTheReplayHeadersTheOriginalHeadersAndThePayload() throws Exception {
    createStream(0);
    Path file = archive(record("0190-a", "2026-09-29T08:00:00.001Z",
        "{ \"city\": \"Z\\u00fcrich\", \"jp\": \"日本語\", \"amount\": 10.50 }"));

    Cli cli = replay(file, "rebuild-1");

    assertThat(cli.exitCode()).as(cli.stderr()).isZero();
    assertThat(cli.stderr()).startsWith("published 1 events to NATS stream " + stream);
    Message m = readAll(1).get(0);
    assertThat(m.getSubject()).isEqualTo(topic);
    assertThat(new String(m.getData(), UTF_8)).isEqualTo("{\"city\":\"Zürich\",\"jp\":\"日本語\",\"amount\":10.50}");
    Headers h = m.getHeaders();
    assertThat(h.getFirst("x-replay")).isEqualTo("true");
    assertThat(h.getFirst("x-replay-batch-id")).isEqualTo("rebuild-1");
    assertThat(h.getFirst("x-original-event-id")).isEqualTo("0190-a");
    assertThat(h.getFirst("tenant")).isEqualTo("acme");
    assertThat(h.getFirst("x-aggregate-type")).isEqualTo("order");
    assertThat(h.getFirst("x-aggregate-id")).isEqualTo("42");
    assertThat(h.getFirst("Nats-Msg-Id")).isEqualTo("0190-a:replay:rebuild-1");
  }

  @Test
  void messagesAreStoredInReplayOrder() throws Exception {
    createStream(0);
    Path file = archive(record("c", "2026-09-29T09:00:00Z", "{}"), record("b", "2026-09-29T08:00:00Z", "{}"),
        record("a", "2026-09-29T08:00:00Z", "{}"), record("d", "2026-09-29T10:00:00.001Z", "{}"));

    assertThat(replay(file, "order").exitCode()).isZero();

    assertThat(readAll(3).stream().map(m -> m.getHeaders().getFirst("x-original-event-id")))
        .containsExactly("a", "b", "c");
  }

  @Test
  void aStreamThatRefusesAMessageMidBatchStopsWithExit1TheCountAndTheFirstUnpublishedId() throws Exception {
    createFullStream(2);
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", "{}"), record("e2", "2026-09-29T08:00:02Z", "{}"),
        record("e3", "2026-09-29T08:00:03Z", "{}"), record("e4", "2026-09-29T08:00:04Z", "{}"));

    Cli cli = replay(file, "b-fail", "--max-pending-acks", "1");

    assertThat(cli.exitCode()).isEqualTo(1);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: publication failed: JetStream cannot store event e3 on subject '" + topic
        + "' now: maximum messages exceeded [10077]; published 2 events in order before it; first"
        + " unpublished event: e3 (created_at 2026-09-29T08:00:03.000Z)\n"
        + "mic-events-replay: to resume, run the same command with --batch-id b-fail\n");
    assertThat(storedCount()).isEqualTo(2);
  }

  @Test
  void withAWindowTheMessagesInFlightBehindTheFailureAreReportedToo() throws Exception {
    createFullStream(3);
    // e2 cannot be stored (the stream already holds 3); e3 and e4 are in flight behind it
    nats.jetStream().publish(topic, "{}".getBytes(UTF_8));
    nats.jetStream().publish(topic, "{}".getBytes(UTF_8));
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", "{}"), record("e2", "2026-09-29T08:00:02Z", "{}"),
        record("e3", "2026-09-29T08:00:03Z", "{}"), record("e4", "2026-09-29T08:00:04Z", "{}"));
    StreamConfiguration full = nats.jetStreamManagement().getStreamInfo(stream).getConfiguration();

    Cli cli = replay(file, "b-window");

    assertThat(cli.exitCode()).isEqualTo(1);
    assertThat(cli.stderr()).contains("published 1 events in order before it; first unpublished event: e2"
        + " (created_at 2026-09-29T08:00:02.000Z)");
    assertThat(storedCount()).isEqualTo(3);
    assertThat(full.getMaxMsgs()).isEqualTo(3);
  }

  @Test
  void aResumedBatchIsDeduplicatedByJetStreamAndANewBatchIsNot() throws Exception {
    createFullStream(2);
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", "{}"), record("e2", "2026-09-29T08:00:02Z", "{}"),
        record("e3", "2026-09-29T08:00:03Z", "{}"), record("e4", "2026-09-29T08:00:04Z", "{}"));
    assertThat(replay(file, "resume-me", "--max-pending-acks", "1").exitCode()).isEqualTo(1);
    // the operator raises the stream's limit and runs the same command again
    nats.jetStreamManagement().updateStream(StreamConfiguration.builder(
        nats.jetStreamManagement().getStreamInfo(stream).getConfiguration()).maxMessages(100).build());

    Cli resumed = replay(file, "resume-me");

    assertThat(resumed.exitCode()).as(resumed.stderr()).isZero();
    assertThat(resumed.stderr()).contains("; 2 of them dropped by JetStream as duplicates of an earlier run of this"
        + " batch; batch id resume-me");
    assertThat(storedCount()).isEqualTo(4);
    assertThat(readAll(4).stream().map(m -> m.getHeaders().getFirst("x-original-event-id")))
        .containsExactly("e1", "e2", "e3", "e4");

    assertThat(replay(file, "another-batch").exitCode()).isZero();
    assertThat(storedCount()).isEqualTo(8);
  }

  /** The archiver writes a directory of files: the replay reads them all, in replay order across files. */
  @Test
  void aDirectoryOfArchiveFilesIsReplayedInOrderAndARerunCountsItsDuplicates() throws Exception {
    createStream(0);
    Path archiveDir = Files.createDirectory(dir.resolve("archive-dir"));
    Files.writeString(archiveDir.resolve("outbox-2.jsonl"), record("e2", "2026-09-29T08:00:02Z", "{}") + "\n"
        + record("e4", "2026-09-29T08:00:04Z", "{}") + "\n", UTF_8);
    try (java.io.Writer w = new java.io.OutputStreamWriter(new java.util.zip.GZIPOutputStream(
        Files.newOutputStream(archiveDir.resolve("outbox-1.jsonl.gz"))), UTF_8)) {
      w.write(record("e3", "2026-09-29T08:00:03Z", "{}") + "\n" + record("e1", "2026-09-29T08:00:01Z", "{}") + "\n");
    }
    Files.writeString(archiveDir.resolve(".outbox-3.jsonl.tmp"), "not an archive file", UTF_8);
    Files.writeString(archiveDir.resolve("README.txt"), "not an archive file", UTF_8);

    Cli first = replay(archiveDir, "dir-1");
    assertThat(first.exitCode()).as(first.stderr()).isZero();
    assertThat(first.stderr()).startsWith("published 4 events to NATS stream " + stream).doesNotContain("duplicates");
    assertThat(readAll(4).stream().map(m -> m.getHeaders().getFirst("x-original-event-id")))
        .containsExactly("e1", "e2", "e3", "e4");

    Cli again = replay(archiveDir, "dir-1");
    assertThat(again.exitCode()).as(again.stderr()).isZero();
    assertThat(again.stderr()).startsWith("published 4 events to NATS stream " + stream)
        .contains("; 4 of them dropped by JetStream as duplicates of an earlier run of this batch; batch id dir-1");
    assertThat(storedCount()).isEqualTo(4);
  }

  /** 1,600 good records, one bad one after the 1,500th in replay order: nothing may be published. */
  private Path archiveWithABadRecordAt1501(String badRecord) throws IOException {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < 1600; i++) {
      lines.add(i == 1500 ? badRecord : record(String.format("e%04d", i), String.format(
          "2026-09-29T08:%02d:%02dZ", i / 60, i % 60), "{\"n\":" + i + "}"));
    }
    return archive(lines.toArray(String[]::new));
  }

  @Test
  void aNonAsciiIdAtRecord1501IsExit2WithNothingPublished() throws Exception {
    createStream(0);
    Path file = archiveWithABadRecordAt1501(record("e1500-é", "2026-09-29T08:25:00Z", "{}"));

    Cli cli = replay(file, "ascii");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: nothing was published: " + file + " line 1501: event"
        + " e1500-é cannot go to NATS: header x-original-event-id has a character NATS headers cannot"
        + " carry at index 6 (U+00E9): header values are printable ASCII\n");
    assertThat(storedCount()).isZero();
  }

  @Test
  void aNonAsciiAggregateIdIsExit2WithNothingPublished() throws Exception {
    createStream(0);
    String bad = "{\"id\":\"e1500\",\"topic\":\"" + topic + "\",\"aggregate_type\":\"order\","
        + "\"aggregate_id\":\"Zürich-7\",\"created_at\":\"2026-09-29T08:25:00Z\",\"payload\":{}}";
    Path file = archiveWithABadRecordAt1501(bad);

    Cli cli = replay(file, "ascii");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: nothing was published: " + file + " line 1501: event"
        + " e1500 cannot go to NATS: header x-aggregate-id has a character NATS headers cannot"
        + " carry at index 1 (U+00FC): header values are printable ASCII\n");
    assertThat(storedCount()).isZero();
  }

  @Test
  void aPayloadOverTheStreamsLimitAtRecord1501IsExit2WithNothingPublished() throws Exception {
    createStream(4096);
    String marker = "PAYLOAD-MARKER-" + stream;
    Path file = archiveWithABadRecordAt1501(record("e1500", "2026-09-29T08:25:00Z",
        "{\"blob\":\"" + marker + "x".repeat(5000) + "\"}"));

    Cli cli = replay(file, "size");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(2);
    assertThat(cli.stderr()).matches("mic-events-replay: nothing was published: \\Q" + file + "\\E line 1501: event"
        + " e1500 cannot go to NATS: the message would be \\d+ bytes \\(payload 5\\d{3} \\+ headers \\d+\\),"
        + " over the 4096 bytes of stream \\Q" + stream + "\\E's max_msg_size: raise the stream's limit\n");
    assertThat(cli.stderr()).doesNotContain(marker);
    assertThat(storedCount()).isZero();
  }

  @Test
  void aPayloadWithinTheLimitOnlyWithoutItsHeadersIsRefusedBeforePublication() throws Exception {
    createStream(1024);
    // 1000 bytes of payload fit, the replay headers do not: the server would refuse this message
    String payload = "{\"b\":\"" + "y".repeat(1000 - 8) + "\"}";
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", "{}"), record("e2", "2026-09-29T08:00:02Z", payload));

    Cli cli = replay(file, "headers");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(2);
    assertThat(cli.stderr()).contains(" line 2: event e2 cannot go to NATS: the message would be ")
        .contains("(payload 1000 + headers ");
    assertThat(storedCount()).isZero();
  }

  @Test
  void aReplayIsNotDroppedAsADuplicateOfTheLivePublication() throws Exception {
    createStream(0);
    Headers live = new Headers().put("Nats-Msg-Id", "0190-live");
    nats.jetStream().publish(topic, live, "{}".getBytes(UTF_8));

    assertThat(replay(archive(record("0190-live", "2026-09-29T08:00:00Z", "{}")), "b").exitCode()).isZero();

    assertThat(storedCount()).isEqualTo(2);
  }

  @Test
  void aMissingStreamOrOneThatDoesNotCaptureTheTopicIsABadArgument() throws Exception {
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", "{}"));

    Cli missing = replay(file, "b");
    assertThat(missing.exitCode()).isEqualTo(2);
    assertThat(missing.stderr()).isEqualTo("mic-events-replay: --nats-stream: NATS stream '" + stream
        + "' does not exist at " + TestServices.natsUrl() + ": create it (its subjects must include '" + topic
        + "') or name an existing stream\n");

    nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".other.>")
        .build());
    Cli elsewhere = replay(file, "b");
    assertThat(elsewhere.exitCode()).isEqualTo(2);
    assertThat(elsewhere.stderr()).isEqualTo("mic-events-replay: --nats-stream: NATS stream '" + stream
        + "' does not capture subject '" + topic + "' (its subjects: [" + stream + ".other.>]): add the subject"
        + " to the stream or name the stream that captures it\n");
    assertThat(storedCount()).isZero();
  }

  @Test
  void anUnreachableServerIsAPublicationFailureAndNoPasswordIsPrinted() throws Exception {
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", "{}"));

    Cli cli = Cli.run("--from-json", file.toString(), "--topic", topic, "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T10:00:00Z", "--to-nats", "nats://replayer:s3cret@127.0.0.1:1", "--nats-stream", stream,
        "--batch-id", "b");

    assertThat(cli.exitCode()).isEqualTo(1);
    assertThat(cli.stderr()).startsWith("mic-events-replay: publication failed: cannot use JetStream at"
        + " nats://***@127.0.0.1:1 (").endsWith("): check the URL, that the server runs and that JetStream is"
        + " enabled; nothing was published\n").doesNotContain("s3cret").doesNotContain("resume");
    assertThat(cli.stderr().lines()).hasSize(1);
  }

  private List<Message> readAll(int count) throws Exception {
    JetStreamSubscription sub = nats.jetStream().subscribe(stream + ".>",
        PullSubscribeOptions.builder().stream(stream).build());
    List<Message> messages = new ArrayList<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (messages.size() < count && System.nanoTime() < deadline) {
      for (Message m : sub.fetch(count - messages.size(), Duration.ofSeconds(1))) {
        m.ack();
        messages.add(m);
      }
    }
    sub.unsubscribe();
    assertThat(messages).hasSize(count);
    return messages;
  }

  @Test
  void aReplayKilledMidBatchHasPrintedItsRandomBatchIdAndResumesWithIt() throws Exception {
    // a run stopped from outside prints no summary: only the id printed first lets JetStream drop the prefix
    // a rerun sends again
    createStream(0);
    Path archive = dir.resolve("archive.jsonl");
    Instant t0 = Instant.parse("2026-09-29T08:00:00Z");
    try (BufferedWriter w = Files.newBufferedWriter(archive, UTF_8)) {
      for (int i = 0; i < KILLED_RUN_EVENTS; i++) {
        w.write("{\"id\":\"e" + i + "\",\"topic\":\"" + topic + "\",\"created_at\":\"" + t0.plusMillis(i)
            + "\",\"payload\":{\"n\":" + i + "}}\n");
      }
    }
    List<String> args = List.of("--from-json", archive.toString(), "--topic", topic,
        "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T10:00:00Z",
        "--to-nats", TestServices.natsUrl(), "--nats-stream", stream);
    Path stderr = dir.resolve("stderr.txt");
    List<String> command = ReplayProcessTest.concat(ReplayProcessTest.concat(List.of(ReplayProcess.java(), "-cp",
        System.getProperty("java.class.path"), ReplayCommand.class.getName()), args.toArray(String[]::new)),
        "--max-pending-acks", "1", "--progress-interval", "0");
    Process process = new ProcessBuilder(command).redirectOutput(dir.resolve("stdout.txt").toFile())
        .redirectError(stderr.toFile()).start();
    try {
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(20)).until(() -> stored() > 0);
      process.destroy(); // SIGTERM, as Ctrl-C or a stopped pod
      assertThat(process.waitFor(30, TimeUnit.SECONDS)).isTrue();
    } finally {
      process.destroyForcibly();
    }
    long before = stored();
    assertThat(before).as("the replay was stopped mid-batch").isBetween(1L, KILLED_RUN_EVENTS - 1L);
    String batchId = nats.jetStreamManagement().getMessage(stream, 1).getHeaders().getFirst("x-replay-batch-id");

    assertThat(Files.readString(stderr, UTF_8)).contains("--batch-id " + batchId);

    Cli resumed = Cli.run(ReplayProcessTest.concat(args, "--batch-id", batchId).toArray(String[]::new));
    assertThat(resumed.exitCode()).as(resumed.stderr()).isZero();
    // every event is in the stream once: what the stopped run stored was dropped as a duplicate
    assertThat(stored()).isEqualTo(KILLED_RUN_EVENTS);
    assertThat(resumed.stderr()).startsWith("published " + KILLED_RUN_EVENTS + " events to NATS stream " + stream)
        .contains(" of them dropped by JetStream as duplicates of an earlier run of this batch; batch id " + batchId
            + " (");
  }

  private long stored() throws Exception {
    return nats.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount();
  }
}
