package io.mic.replay;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.api.StreamConfiguration;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A replay stopped from outside (Ctrl-C, SIGTERM, a killed pod) before its summary: the operator must still
 * know the batch id, since only the same id lets JetStream drop the prefix a rerun sends again.
 */
class InterruptedReplayTest {
  private static final int EVENTS = 60_000;

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
    nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>")
        .duplicateWindow(Duration.ofMinutes(10)).build());
  }

  @AfterEach
  void cleanUp() throws Exception {
    try {
      nats.jetStreamManagement().deleteStream(stream);
    } catch (JetStreamApiException e) {
      // already gone
    }
    nats.close();
  }

  private long stored() throws Exception {
    return nats.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount();
  }

  @Test
  void aReplayKilledMidBatchHasPrintedItsRandomBatchIdAndResumesWithIt() throws Exception {
    Path archive = dir.resolve("archive.jsonl");
    Instant t0 = Instant.parse("2026-09-29T08:00:00Z");
    try (BufferedWriter w = Files.newBufferedWriter(archive, UTF_8)) {
      for (int i = 0; i < EVENTS; i++) {
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
    assertThat(before).as("the replay was stopped mid-batch").isBetween(1L, EVENTS - 1L);
    String batchId = nats.jetStreamManagement().getMessage(stream, 1).getHeaders().getFirst("x-replay-batch-id");

    assertThat(Files.readString(stderr, UTF_8)).contains("--batch-id " + batchId);

    Cli resumed = Cli.run(ReplayProcessTest.concat(args, "--batch-id", batchId).toArray(String[]::new));
    assertThat(resumed.exitCode()).as(resumed.stderr()).isZero();
    // every event is in the stream once: what the stopped run stored was dropped as a duplicate
    assertThat(stored()).isEqualTo(EVENTS);
    assertThat(resumed.stderr()).startsWith("published " + EVENTS + " events to NATS stream " + stream)
        .contains(" of them dropped by JetStream as duplicates of an earlier run of this batch; batch id " + batchId
            + " (");
  }
}
