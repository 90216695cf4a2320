package io.mic.replay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class CliProgressTest {

  @Test
  void progressLinesGiveTheCountAndARate() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CliProgress progress = new CliProgress(new PrintStream(err, true, StandardCharsets.UTF_8), Duration.ofNanos(1));

    progress.read(4096, 2000);
    progress.published(1500);

    String[] lines = err.toString(StandardCharsets.UTF_8).split("\n");
    assertThat(lines).hasSize(2);
    assertThat(lines[0]).matches("progress: 4096 records read \\(\\d+/s\\), 2000 selected");
    assertThat(lines[1]).matches("progress: 1500 events published \\(\\d+/s since the start\\)");
  }

  @Test
  void aZeroIntervalPrintsNothing() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    CliProgress progress = new CliProgress(new PrintStream(err, true, StandardCharsets.UTF_8), Duration.ZERO);

    progress.read(4096, 2000);
    progress.published(1500);

    assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
  }
}
