package io.mic.replay;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Input the parser cannot or must not take: records deeper or longer than its limits, lines longer than the
 * record bound, impossible dates. Each is exit 2 with the file and line, never a stack trace.
 */
class InputLimitsTest {
  private static final String HELP = "Try 'mic-events-replay --help' for the options.\n";

  @TempDir
  Path dir;

  private static String record(String id, String createdAt, String payload) {
    return "{\"id\":\"" + id + "\",\"topic\":\"order.created\",\"created_at\":\"" + createdAt + "\",\"payload\":"
        + payload + "}";
  }

  private Path archive(String... lines) throws IOException {
    Path file = dir.resolve("archive.jsonl");
    Files.writeString(file, String.join("\n", lines) + "\n", UTF_8);
    return file;
  }

  private static Cli dryRun(Path file, String from, String to, String... more) {
    String[] base = {"--from-json", file.toString(), "--topic", "order.created", "--from", from, "--to", to};
    String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(base), java.util.Arrays.stream(more))
        .toArray(String[]::new);
    return Cli.run(args);
  }

  @Test
  void aPayloadNestedDeeperThanTheParserAllowsIsExit2NamingTheLine() throws IOException {
    String deep = "[".repeat(1001) + "]".repeat(1001);
    Path file = archive(record("ok", "2026-09-29T08:00:00Z", "{}"), record("deep", "2026-09-29T08:00:01Z", deep));

    Cli cli = dryRun(file, "2026-09-29T00:00:00Z", "2026-09-30T00:00:00Z");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: cannot read the archive: " + file + " line 2: the record"
        + " is beyond a limit of the JSON parser: Document nesting depth (1001) exceeds the maximum allowed (1000,"
        + " from `StreamReadConstraints.getMaxNestingDepth()`)\n");
    assertThat(cli.stdout()).isEmpty();
  }

  @Test
  void aNumberLongerThanTheParserAllowsIsExit2NamingTheLine() throws IOException {
    Path file = archive(record("long", "2026-09-29T08:00:00Z", "{\"n\":" + "7".repeat(1001) + "}"));

    Cli cli = dryRun(file, "2026-09-29T00:00:00Z", "2026-09-30T00:00:00Z");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: cannot read the archive: " + file + " line 1: the record"
        + " is beyond a limit of the JSON parser: Number value length (1001) exceeds the maximum allowed (1000,"
        + " from `StreamReadConstraints.getMaxNumberLength()`)\n");
  }

  @Test
  void aLineLongerThanTheRecordBoundIsExit2NamingTheLineAndTheOption() throws IOException {
    Path file = dir.resolve("long-line.jsonl");
    try (BufferedWriter w = Files.newBufferedWriter(file, UTF_8)) {
      w.write(record("small", "2026-09-29T08:00:00Z", "{}"));
      w.write('\n');
      w.write(record("huge", "2026-09-29T08:00:01Z", "[" + "1,".repeat(1_100_000) + "1]")); // 2.2 MB of small numbers
      w.write('\n');
    }

    Cli cli = dryRun(file, "2026-09-29T00:00:00Z", "2026-09-30T00:00:00Z", "--max-record-mb", "1");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: cannot read the archive: " + file + " line 2: the record"
        + " is longer than 1048576 bytes, the longest record this replay reads: raise the bound with"
        + " --max-record-mb (maxRecordBytes) if the destination takes messages that big\n");
  }

  @Test
  void theRecordBoundMustBePositive() throws IOException {
    Path file = archive(record("a", "2026-09-29T08:00:00Z", "{}"));

    Cli cli = dryRun(file, "2026-09-29T00:00:00Z", "2026-09-30T00:00:00Z", "--max-record-mb", "0");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: --max-record-mb: maxRecordBytes must be at least 1024,"
        + " was 0\n" + HELP);
  }

  @Test
  void anImpossibleDateInFromOrToIsRefusedNotClamped() throws IOException {
    Path file = archive(record("a", "2026-02-28T08:00:00Z", "{}"));

    Cli from = dryRun(file, "2026-02-30T00:00:00Z", "2026-03-31T00:00:00Z");
    Cli to = dryRun(file, "2026-02-01T00:00:00Z", "2026-02-29T23:59:59+01:00");

    assertThat(from.exitCode()).isEqualTo(2);
    assertThat(from.stderr()).isEqualTo("mic-events-replay: Invalid value for option '--from':"
        + " '2026-02-30T00:00:00Z' is not a valid date-time: Invalid date 'FEBRUARY 30'\n" + HELP);
    assertThat(to.exitCode()).isEqualTo(2);
    assertThat(to.stderr()).isEqualTo("mic-events-replay: Invalid value for option '--to':"
        + " '2026-02-29T23:59:59+01:00' is not a valid date-time: Invalid date 'February 29' as '2026' is not a leap"
        + " year\n" + HELP);
    assertThat(from.stdout()).isEmpty();
  }

  @Test
  void anImpossibleDateInTheArchiveIsExit2NamingTheLine() throws IOException {
    Path file = archive(record("a", "2026-02-28T08:00:00Z", "{}"), record("b", "2026-02-30T08:00:00Z", "{}"),
        record("c", "2026-04-31T08:00:00.5+02:00", "{}"));

    Cli cli = dryRun(file, "2026-01-01T00:00:00Z", "2026-12-31T00:00:00Z");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: cannot read the archive: " + file + " line 2: field"
        + " 'created_at': '2026-02-30T08:00:00Z' is not a valid date-time: Invalid date 'FEBRUARY 30'\n");
    assertThat(cli.stdout()).isEmpty();
  }
}
