package io.mic.outbox.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Without a Docker engine the kit falls back to the local server, as designed, and nothing is logged at
 * ERROR on the way (Testcontainers logs its failed search for Docker at ERROR when it is asked). The child
 * JVM logs through slf4j-simple at its defaults, as a user's build would, not through this build's quieter
 * settings.
 */
class OutboxTestDatabaseFallbackTest {

  @Test
  void theFallbackToTheLocalServerLogsNoError(@TempDir Path home) throws Exception {
    Assumptions.assumeFalse(Files.exists(Path.of("/var/run/docker.sock")),
        "a Docker socket is present: the kit asks Testcontainers instead of falling back");
    List<String> lines = resolveWithoutDocker(home);
    assertThat(lines).as("what the child printed and logged")
        .anySatisfy(line -> assertThat(line).contains("(local server)"))
        .noneSatisfy(line -> assertThat(line).contains(" ERROR "));
  }

  /** Every line {@link Child} prints or logs, with no database URL, no Docker host and an empty home. */
  private static List<String> resolveWithoutDocker(Path home) throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    ProcessBuilder pb = new ProcessBuilder(List.of(java, "-Duser.home=" + home, "-cp", classpath,
        Child.class.getName()));
    pb.environment().remove(OutboxTestDatabase.POSTGRES_ENV + "_URL");
    pb.environment().remove("DOCKER_HOST");
    pb.redirectErrorStream(true);
    Process p = pb.start();
    byte[] out = p.getInputStream().readAllBytes();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new String(out, StandardCharsets.UTF_8).lines().toList();
  }

  /** Resolves PostgreSQL and prints it, or the exception it failed with (which names the source too). */
  public static final class Child {
    public static void main(String[] args) {
      try {
        System.out.println(OutboxTestDatabase.postgres());
      } catch (RuntimeException e) {
        System.out.println(e);
      }
      System.exit(0);
    }
  }
}
