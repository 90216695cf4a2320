package io.mic.replay;

import static org.assertj.core.api.Assertions.assertThat;

import io.nats.client.Connection;
import io.nats.client.api.StreamConfiguration;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The packaged command, run as users run it: {@code java -jar target/mic-events-replay.jar} and the launcher. */
class MicEventsReplayJarIT {
  private static final Path JAR = Path.of("target", "mic-events-replay.jar");
  private static final Path LAUNCHER = Path.of("target", "mic-events-replay");

  @TempDir
  Path dir;

  private Path archive(String topic) throws Exception {
    Path file = dir.resolve("archive.jsonl");
    Files.writeString(file, "{\"id\":\"b\",\"topic\":\"" + topic + "\",\"created_at\":\"2026-09-29T08:00:01Z\","
        + "\"payload\":{\"n\":2}}\n{\"id\":\"a\",\"topic\":\"" + topic + "\",\"created_at\":\"2026-09-29T08:00:00Z\","
        + "\"payload\":{\"n\":1}}\n", StandardCharsets.UTF_8);
    return file;
  }

  @Test
  void theJarRunsADryRunAndRejectsBadArgumentsWithExit2() throws Exception {
    Path file = archive("order.created");

    ReplayProcess ok = ReplayProcess.run(List.of(ReplayProcess.java(), "-jar", JAR.toString(), "--from-json",
        file.toString(), "--topic", "order.created", "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T09:00:00Z",
        "--batch-id", "jar"), dir);
    ReplayProcess bad = ReplayProcess.run(List.of(ReplayProcess.java(), "-jar", JAR.toString(), "--from-json",
        file.toString(), "--topic", "order.created", "--from", "yesterday", "--to", "2026-09-29T09:00:00Z"), dir);

    assertThat(ok.exitCode()).as(ok.stderr()).isZero();
    assertThat(ok.stdout().lines().map(l -> l.substring(16, 17)).toList()).containsExactly("a", "b");
    assertThat(ok.stderr()).startsWith("dry run: 2 events selected from 2 records");
    assertThat(bad.exitCode()).isEqualTo(2);
    assertThat(bad.stderr()).startsWith("mic-events-replay: Invalid value for option '--from': 'yesterday'");
  }

  /** A 100 MB line, run in a 128 MB heap: refused at the record bound, with the file and line, no stack trace. */
  @Test
  void aHundredMegabyteLineIsExit2NamingTheFileAndLine() throws Exception {
    Path file = dir.resolve("huge.jsonl");
    try (java.io.BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      w.write("{\"id\":\"a\",\"topic\":\"order.created\",\"created_at\":\"2026-09-29T08:00:00Z\",\"payload\":{}}\n");
      w.write("{\"id\":\"b\",\"topic\":\"order.created\",\"created_at\":\"2026-09-29T08:00:01Z\",\"payload\":[");
      String chunk = "1,".repeat(1 << 19);
      for (int i = 0; i < 100; i++) {
        w.write(chunk); // 100 MiB of small numbers: no single value reaches a parser limit
      }
      w.write("1]}\n");
    }

    ReplayProcess run = ReplayProcess.run(List.of(ReplayProcess.java(), "-Xmx128m", "-jar", JAR.toString(),
        "--from-json", file.toString(), "--topic", "order.created", "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T09:00:00Z"), dir);

    assertThat(run.exitCode()).as(run.stderr()).isEqualTo(2);
    assertThat(run.stderr()).isEqualTo("mic-events-replay: cannot read the archive: " + file + " line 2: the record"
        + " is longer than 16777216 bytes, the longest record this replay reads: raise the bound with"
        + " --max-record-mb (maxRecordBytes) if the destination takes messages that big\n");
    assertThat(run.stdout()).isEmpty();
  }

  /** A 100 MB string: Jackson's string limit, reported with the line instead of an unexpected error. */
  @Test
  void aHundredMegabyteStringIsExit2NamingTheFileAndLine() throws Exception {
    Path file = dir.resolve("string.jsonl");
    try (java.io.BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      w.write("{\"id\":\"b\",\"topic\":\"order.created\",\"created_at\":\"2026-09-29T08:00:01Z\",\"payload\":\"");
      String chunk = "x".repeat(1 << 20);
      for (int i = 0; i < 100; i++) {
        w.write(chunk);
      }
      w.write("\"}\n");
    }

    ReplayProcess run = ReplayProcess.run(List.of(ReplayProcess.java(), "-Xmx256m", "-jar", JAR.toString(),
        "--from-json", file.toString(), "--topic", "order.created", "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T09:00:00Z", "--max-record-mb", "200"), dir);

    assertThat(run.exitCode()).as(run.stderr()).isEqualTo(2);
    // the parser checks the length per buffer segment: the reported length is just past the limit
    assertThat(run.stderr()).matches("mic-events-replay: cannot read the archive: \\Q" + file + "\\E line 1: the"
        + " record is beyond a limit of the JSON parser: String value length \\(200\\d{5}\\) exceeds the maximum"
        + " allowed \\(20000000, from `StreamReadConstraints.getMaxStringLength\\(\\)`\\)\n");
  }

  @Test
  void theLauncherPublishesToJetStreamThroughTheJar() throws Exception {
    try (Connection nats = TestServices.nats()) {
      String stream = TestServices.uniqueName();
      nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>").build());
      try {
        Path file = archive(stream + ".order.created");

        ReplayProcess run = ReplayProcess.run(List.of("sh", LAUNCHER.toString(), "--from-json", file.toString(),
            "--topic", stream + ".order.created", "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T09:00:00Z",
            "--to-nats", TestServices.natsUrl(), "--nats-stream", stream, "--batch-id", "launcher"), dir);

        assertThat(run.exitCode()).as(run.stderr()).isZero();
        assertThat(run.stderr()).startsWith("published 2 events to NATS stream " + stream);
        assertThat(nats.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount()).isEqualTo(2);
      } finally {
        nats.jetStreamManagement().deleteStream(stream);
      }
    }
  }
}
