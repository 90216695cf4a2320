package io.mic.replay;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The main class run as its own JVM, as the jar runs it: real exit codes through System.exit, UTF-8 on
 * stdout whatever the platform charset. (The packaged jar itself is run by MicEventsReplayJarIT.)
 */
class ReplayProcessTest {
  @TempDir
  Path dir;

  @Test
  void theMainClassExitsWithTheContractCodesAndWritesUtf8() throws Exception {
    Path archive = dir.resolve("a.jsonl");
    Files.writeString(archive, "{\"id\":\"é1\",\"topic\":\"t\",\"created_at\":\"2026-09-29T08:00:00Z\",\"payload\":{}}\n",
        StandardCharsets.UTF_8);
    List<String> base = List.of(ReplayProcess.java(), "-Dfile.encoding=ISO-8859-1", "-cp",
        System.getProperty("java.class.path"), ReplayCommand.class.getName());

    ReplayProcess ok = ReplayProcess.run(concat(base, "--from-json", archive.toString(), "--topic", "t", "--from",
        "2026-09-29T08:00:00Z", "--to", "2026-09-29T08:00:00Z", "--batch-id", "p"), dir);
    ReplayProcess bad = ReplayProcess.run(concat(base, "--from-json", archive.toString(), "--topic", "t"), dir);

    assertThat(ok.exitCode()).as(ok.stderr()).isZero();
    assertThat(ok.stdout()).startsWith("{\"original_id\":\"é1\",\"topic\":\"t\"");
    assertThat(bad.exitCode()).isEqualTo(2);
    assertThat(bad.stderr()).startsWith("mic-events-replay: Missing required options: '--from=ISO-8601',"
        + " '--to=ISO-8601'");
  }

  @Test
  void aDryRunWhoseListCannotBeWrittenFailsInsteadOfReportingItDone() throws Exception {
    Path archive = dir.resolve("a.jsonl");
    Files.writeString(archive, "{\"id\":\"e1\",\"topic\":\"t\",\"created_at\":\"2026-09-29T08:00:00Z\",\"payload\":{}}\n",
        StandardCharsets.UTF_8);
    Path err = dir.resolve("stderr.txt");
    // stdout on /dev/full: every write fails with ENOSPC, as on a full disk
    Process process = new ProcessBuilder(ReplayProcess.java(), "-cp", System.getProperty("java.class.path"),
        ReplayCommand.class.getName(), "--from-json", archive.toString(), "--topic", "t", "--from",
        "2026-09-29T08:00:00Z", "--to", "2026-09-29T08:00:00Z", "--batch-id", "full")
        .redirectOutput(new File("/dev/full")).redirectError(err.toFile()).start();
    assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();

    assertThat(Files.readString(err, StandardCharsets.UTF_8)).isEqualTo("mic-events-replay: the dry run failed,"
        + " its list on stdout is incomplete: cannot write the dry run: stdout refused the output (a full disk,"
        + " or a reader that went away)\n");
    assertThat(process.exitValue()).isEqualTo(1);
  }

  static List<String> concat(List<String> base, String... more) {
    return java.util.stream.Stream.concat(base.stream(), java.util.Arrays.stream(more)).toList();
  }
}
