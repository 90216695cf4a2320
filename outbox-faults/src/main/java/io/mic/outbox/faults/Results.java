package io.mic.outbox.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * Appends one Markdown table row per scenario to the results file ({@code target/faults/results.md}). The
 * seconds stuck (the longest stretch without a new event at the broker, and how much of it came after the
 * broker was back) are {@code n/a} where a scenario does not measure them.
 */
public final class Results {
  private static final String HEADER = "| fault | mode | sink | repetitions | seed | events | lost | duplicates | bound"
      + " | order violations | stuck | DLQ | seconds stuck | duration |\n"
      + "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";

  private Results() {}

  public static synchronized void append(Path file, String fault, String mode, boolean ordered, String sink,
      int repetitions, long seed, Figures f, long duplicateBound, String secondsStuck, Duration duration)
      throws IOException {
    Files.createDirectories(file.getParent());
    if (!Files.exists(file)) {
      Files.writeString(file, HEADER, StandardCharsets.UTF_8);
    }
    String row = String.format("| %s | %s | %s | %d | %d | %d | %d | %d | %d | %s | %d | %d | %s | %.1f s |%n", fault, mode,
        sink, repetitions, seed, f.events(), f.lost(), f.duplicates(), duplicateBound,
        ordered ? Integer.toString(f.orderViolations()) : "n/a", f.stuck(), f.dlq(), secondsStuck,
        duration.toMillis() / 1000.0);
    Files.writeString(file, row, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
  }
}
