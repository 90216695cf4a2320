package io.mic.outbox.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/** Appends one Markdown table row per scenario to the results file ({@code target/faults/results.md}). */
public final class Results {
  private static final String HEADER = "| fault | mode | sink | repetitions | seed | events | lost | duplicates | bound"
      + " | order violations | stuck | DLQ | duration |\n"
      + "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";

  private Results() {}

  public static synchronized void append(Path file, String fault, String mode, boolean ordered, String sink,
      int repetitions, long seed, Figures f, long duplicateBound, Duration duration) throws IOException {
    Files.createDirectories(file.getParent());
    if (!Files.exists(file)) {
      Files.writeString(file, HEADER, StandardCharsets.UTF_8);
    }
    String row = String.format("| %s | %s | %s | %d | %d | %d | %d | %d | %d | %s | %d | %d | %.1f s |%n", fault, mode,
        sink, repetitions, seed, f.events(), f.lost(), f.duplicates(), duplicateBound,
        ordered ? Integer.toString(f.orderViolations()) : "n/a", f.stuck(), f.dlq(),
        duration.toMillis() / 1000.0);
    Files.writeString(file, row, StandardCharsets.UTF_8, StandardOpenOption.APPEND);
  }
}
