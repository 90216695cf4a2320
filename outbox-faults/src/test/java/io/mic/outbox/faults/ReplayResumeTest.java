package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxHeaders;
import io.mic.replay.ReplayCommand;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.MessageInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

/**
 * {@code mic-events-replay} killed (SIGKILL) in the middle of a replay to JetStream, then run again with the
 * same {@code --batch-id}. The resumed run starts over from the first event (the CLI keeps no checkpoint):
 * nothing is skipped, and every event it republishes carries the same {@code Nats-Msg-Id}
 * ({@code <original-id>:replay:<batch-id>}). Inside the stream's duplicate window JetStream drops them all;
 * with a window shorter than the pause before the resume, the whole prefix published before the kill comes
 * twice, exactly that.
 */
class ReplayResumeTest {
  private static final int EVENTS = 20_000;

  @Tag("full")
  @ParameterizedTest(name = "replay SIGKILL + resume, duplicate window {0} ms")
  @ValueSource(longs = {120_000, 500})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killedAndResumedWithTheSameBatchId(long windowMillis) throws Exception {
    long began = System.nanoTime();
    String stream = "R" + UUID.randomUUID().toString().substring(0, 8);
    String topic = stream + ".account";
    Path dir = Scenario.RESULTS.getParent().resolve("logs").resolve("replay-resume-" + windowMillis + "-" + stream);
    Files.createDirectories(dir);
    PrivateNats nats = Servers.nats();
    nats.createStream(stream, Duration.ofMillis(windowMillis));
    List<String> ids = archive(dir.resolve("archive.jsonl"), topic);
    String batchId = "faults-" + stream;
    List<String> args = List.of("--from-json", dir.resolve("archive.jsonl").toString(), "--topic", topic,
        "--from", "2026-09-29T00:00:00Z", "--to", "2026-09-30T00:00:00Z", "--to-nats", nats.url(),
        "--nats-stream", stream, "--batch-id", batchId);

    Process first = replay(dir, "first", args);
    Awaitility.await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(10))
        .until(() -> storedCount(stream) >= EVENTS / 4 || !first.isAlive());
    assertThat(first.isAlive()).as("the replay is still running when killed").isTrue();
    first.destroyForcibly().waitFor(20, TimeUnit.SECONDS);
    long prefix = settledCount(stream); // what the server still had in its socket buffer is stored too
    assertThat(prefix).as("killed in the middle").isBetween(1L, EVENTS - 1L);
    long killedAt = System.nanoTime();
    // the pause before the resume: past the short window, well inside the long one
    Awaitility.await().atMost(Duration.ofSeconds(30))
        .until(() -> System.nanoTime() - killedAt > TimeUnit.MILLISECONDS.toNanos(Math.min(windowMillis * 3, 2_000)));

    Process resumed = replay(dir, "resumed", args);
    assertThat(resumed.waitFor(180, TimeUnit.SECONDS)).as("the resumed replay ends").isTrue();
    assertThat(resumed.exitValue()).as("exit code of the resumed replay; stderr: %s",
        Files.readString(dir.resolve("resumed.err"))).isZero();

    List<String> stored = originalIds(stream);
    long duplicates = stored.size() - stored.stream().distinct().count();
    long skipped = ids.stream().filter(id -> !stored.contains(id)).count();
    Results.append(Scenario.RESULTS, "replay SIGKILL + resume, same --batch-id, window " + windowMillis + " ms",
        "replay", false, "nats", 1, 0, new Figures(EVENTS, (int) stored.stream().distinct().count(), (int) skipped,
            (int) duplicates, 0, 0, 0, 0), windowMillis > 2_000 ? 0 : prefix, "n/a",
        Duration.ofNanos(System.nanoTime() - began));
    System.out.printf("replay resume (window %d ms): %d of %d stored before the kill, %d duplicates after the"
        + " resume%n", windowMillis, prefix, EVENTS, duplicates);
    assertThat(skipped).as("events skipped").isZero();
    if (windowMillis > 2_000) {
      assertThat(duplicates).as("JetStream drops the resumed prefix inside its window").isZero();
      assertThat(stored).as("replay order").containsExactlyElementsOf(ids);
    } else {
      assertThat(duplicates).as("outside the window the prefix stored before the kill comes again").isEqualTo(prefix);
      assertThat(stored.subList(0, (int) prefix)).as("the killed run, in replay order")
          .containsExactlyElementsOf(ids.subList(0, (int) prefix));
      assertThat(stored.subList((int) prefix, stored.size())).as("the resumed run, in replay order")
          .containsExactlyElementsOf(ids);
    }
    try (Connection c = nats.connect()) {
      c.jetStreamManagement().deleteStream(stream);
    }
  }

  /** JSON Lines, one event a millisecond, in replay order; returns the ids in that order. */
  private static List<String> archive(Path file, String topic) throws IOException {
    List<String> ids = new ArrayList<>();
    StringBuilder text = new StringBuilder();
    Instant t = Instant.parse("2026-09-29T08:00:00Z");
    for (int i = 0; i < EVENTS; i++) {
      String id = String.format("e%06d", i);
      ids.add(id);
      text.append("{\"id\":\"").append(id).append("\",\"topic\":\"").append(topic)
          .append("\",\"aggregate_type\":\"account\",\"aggregate_id\":\"a").append(i % 50)
          .append("\",\"created_at\":\"").append(t.plusMillis(i)).append("\",\"payload\":{\"seq\":").append(i)
          .append("}}\n");
    }
    Files.writeString(file, text, StandardCharsets.UTF_8);
    return ids;
  }

  private static Process replay(Path dir, String name, List<String> args) throws IOException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
        ReplayCommand.class.getName()));
    command.addAll(args);
    return new ProcessBuilder(command).redirectOutput(dir.resolve(name + ".out").toFile())
        .redirectError(dir.resolve(name + ".err").toFile()).start();
  }

  private static long storedCount(String stream) throws Exception {
    try (Connection c = Servers.nats().connect()) {
      return c.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount();
    }
  }

  /** The stream's message count once it stopped changing for 300 ms. */
  private static long settledCount(String stream) {
    long[] last = {-1};
    long[] since = {System.nanoTime()};
    Awaitility.await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> {
      long now = storedCount(stream);
      if (now != last[0]) {
        last[0] = now;
        since[0] = System.nanoTime();
      }
      return System.nanoTime() - since[0] > TimeUnit.MILLISECONDS.toNanos(300);
    });
    return last[0];
  }

  private static List<String> originalIds(String stream) throws Exception {
    List<String> ids = new ArrayList<>();
    try (Connection c = Servers.nats().connect()) {
      JetStreamManagement jsm = c.jetStreamManagement();
      long last = jsm.getStreamInfo(stream).getStreamState().getLastSequence();
      for (long seq = 1; seq <= last; seq++) {
        MessageInfo m = jsm.getMessage(stream, seq);
        ids.add(m.getHeaders().getFirst(OutboxHeaders.ORIGINAL_EVENT_ID));
      }
    }
    return ids;
  }
}
