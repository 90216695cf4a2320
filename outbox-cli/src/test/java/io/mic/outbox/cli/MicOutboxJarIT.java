package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The packaged command, run as operators run it: {@code java -jar target/mic-outbox.jar}. */
class MicOutboxJarIT {
  private static final Path JAR = Path.of("target", "mic-outbox.jar");

  @TempDir
  Path dir;

  private record Result(int exitCode, String stdout, String stderr) {}

  private Result run(Map<String, String> env, String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-jar", JAR.toString()));
    command.addAll(List.of(args));
    Path out = Files.createTempFile(dir, "stdout", ".txt");
    Path err = Files.createTempFile(dir, "stderr", ".txt");
    ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().putAll(env);
    Process p = pb.start();
    if (!p.waitFor(60, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("mic-outbox did not finish within 60 s: " + command);
    }
    return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
        Files.readString(err, StandardCharsets.UTF_8));
  }

  @Test
  void pauseStatusAndResumeAcrossProcessesOnAnH2File() throws Exception {
    String url = "jdbc:h2:file:" + dir.resolve("app").toAbsolutePath();
    JdbcOutboxStore store = Database.connect(url, "sa", "", "outbox").store();
    store.createSchema();
    try (Connection c = DriverManager.getConnection(url, "sa", "")) {
      c.setAutoCommit(false);
      store.append(c, OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build());
      c.commit();
    } // the last connection closes the file, so the command's process can open it

    Result pause = run(Map.of(), "--jdbc-url", url, "--user", "sa", "pause", "--reason", "deploy of billing v2");
    assertThat(pause.exitCode()).as(pause.stderr()).isZero();
    assertThat(pause.stdout()).startsWith("paused every topic at ").endsWith(": deploy of billing v2\n");
    assertThat(pause.stderr()).isEmpty();

    Result status = run(Map.of(), "--jdbc-url", url, "--user", "sa", "status", "--json");
    assertThat(status.exitCode()).as(status.stderr()).isZero();
    assertThat(status.stdout()).startsWith("{\"table\":\"outbox\",\"database\":\"H2\",\"counts\":{\"PENDING\":1,"
        + "\"PROCESSING\":0,\"DISPATCHED\":0,\"DLQ\":0},\"lagSeconds\":")
        .contains("\"pauses\":[{\"topic\":null,\"reason\":\"deploy of billing v2\",\"pausedAt\":\"");

    Result resume = run(Map.of(), "--jdbc-url", url, "--user", "sa", "resume");
    assertThat(resume.stdout()).isEqualTo("resumed every topic\n");
  }

  @Test
  void badArgumentsAndAnUnreachableDatabaseAreExit2WithoutStackTraceOrPassword() throws Exception {
    Result missing = run(Map.of(), "status");
    assertThat(missing.exitCode()).isEqualTo(2);
    assertThat(missing.stderr()).isEqualTo("mic-outbox: Missing required option: '--jdbc-url=URL'\n"
        + "Try 'mic-outbox --help' or 'mic-outbox help COMMAND' for the options.\n");

    Result down = run(Map.of(MicOutbox.PASSWORD_ENV, "pw-never-shown"), "--jdbc-url",
        "jdbc:mariadb://127.0.0.1:1/app?connectTimeout=2000", "--user", "ops", "status");
    assertThat(down.exitCode()).isEqualTo(2);
    assertThat(down.stderr()).startsWith("mic-outbox: cannot connect to jdbc:mariadb://127.0.0.1:1/app")
        .endsWith("; check --jdbc-url, --user and the password (--password or MIC_OUTBOX_PASSWORD)\n")
        .doesNotContain("pw-never-shown").doesNotContain("\tat ").doesNotContain("Exception in thread");
    assertThat(down.stdout()).isEmpty();

    Result help = run(Map.of(), "--help");
    assertThat(help.exitCode()).isZero();
    assertThat(help.stdout()).startsWith("Usage: mic-outbox ").contains("Exit codes:");
  }
}
