package io.mic.outbox.test;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A password in {@code MIC_TEST_POSTGRES_URL} (a CI secret, say) is never printed by the kit: not by
 * {@link OutboxTestDatabase#toString()}, not in the failure of an unreachable database. The environment is
 * read once per JVM, so each case runs in a JVM of its own.
 */
class OutboxTestDatabaseSecretsTest {

  @Test
  void aReachableDatabaseIsShownWithoutThePasswordOfItsUrl() throws Exception {
    String out = runWith("jdbc:postgresql://127.0.0.1:5432/test?password=S3cret-pw&ssl=false");
    assertThat(out).isEqualTo("PostgreSQL at jdbc:postgresql://127.0.0.1:5432/test?password=***&ssl=false"
        + " (MIC_TEST_POSTGRES_URL)\n");
  }

  @Test
  void anUnreachableDatabaseFailsWithoutThePasswordOfItsUrl() throws Exception {
    String out = runWith("jdbc:postgresql://127.0.0.1:1/test?password=S3cret-pw&connectTimeout=2");
    assertThat(out).startsWith("java.lang.IllegalStateException: PostgreSQL for tests is unreachable at"
        + " jdbc:postgresql://127.0.0.1:1/test?password=***&connectTimeout=2 (MIC_TEST_POSTGRES_URL): ")
        .doesNotContain("S3cret");
  }

  /** What {@link Child} prints with {@code url} as {@code MIC_TEST_POSTGRES_URL}, under {@code CI=true}. */
  private static String runWith(String url) throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    ProcessBuilder pb = new ProcessBuilder(List.of(java, "-cp", classpath, Child.class.getName()));
    pb.environment().put("MIC_TEST_POSTGRES_URL", url);
    pb.environment().put("MIC_TEST_POSTGRES_USER", "postgres");
    pb.environment().put("CI", "true");
    pb.redirectErrorStream(false).redirectError(ProcessBuilder.Redirect.DISCARD);
    Process p = pb.start();
    byte[] out = p.getInputStream().readAllBytes();
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    return new String(out, StandardCharsets.UTF_8);
  }

  /** Resolves the PostgreSQL of the environment and prints it, or the exception it failed with. */
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
