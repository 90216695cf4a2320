package io.mic.outbox.rabbitmq;

import static org.junit.jupiter.api.Assertions.fail;

import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.Container;
import org.testcontainers.rabbitmq.RabbitMQContainer;

/**
 * The RabbitMQ broker the tests use, found in this order: {@code MIC_TEST_RABBITMQ_URI}; a Testcontainers
 * container when Docker is available; the local server ({@code amqp://guest:guest@127.0.0.1:5672}). When
 * none answers the test fails under {@code CI=true} and is skipped elsewhere. Tests that stop the broker
 * or change its settings run {@code rabbitmqctl} in the container, or locally for a local broker.
 */
public final class TestRabbit {
  static final String LOCAL_URI = "amqp://guest:guest@127.0.0.1:5672";

  private record Target(String uri, String source, RabbitMQContainer container) {}

  private static Target target;

  private TestRabbit() {}

  public static synchronized String uri() {
    if (target == null) {
      target = resolve();
    }
    return target.uri();
  }

  private static Target resolve() {
    String uri = System.getenv("MIC_TEST_RABBITMQ_URI");
    if (uri != null && !uri.isBlank()) {
      return new Target(uri, "MIC_TEST_RABBITMQ_URI", null);
    }
    if (dockerAvailable()) {
      RabbitMQContainer c = new RabbitMQContainer("rabbitmq:3.13");
      c.start();
      Runtime.getRuntime().addShutdownHook(new Thread(c::stop));
      return new Target(c.getAmqpUrl(), "Testcontainers", c);
    }
    return new Target(LOCAL_URI, "local server", null);
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  /** A fresh connection to the test broker; fails or skips the test when there is none. */
  public static Connection connect() {
    try {
      ConnectionFactory f = new ConnectionFactory();
      f.setUri(uri());
      f.setConnectionTimeout(2_000);
      f.setAutomaticRecoveryEnabled(false);
      return f.newConnection("mic-outbox-test");
    } catch (Exception e) {
      String message = "RabbitMQ is not reachable at " + uri().replaceAll("//[^@/]*@", "//***@") + " (" + e
          + "): start it with 'rabbitmq-server -detached' or set MIC_TEST_RABBITMQ_URI";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        fail(message);
      }
      Assumptions.abort(message);
      throw new AssertionError(message);
    }
  }

  /** A unique exchange or queue name, so runs never share them. */
  public static String uniqueName() {
    return "mic-test-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12).toLowerCase(Locale.ROOT);
  }

  /** Skips the test unless this broker can be controlled with rabbitmqctl (local or in a container). */
  static void assumeControllable() {
    uri();
    String host = URI.create(target.uri()).getHost();
    Assumptions.assumeTrue(target.container() != null || "127.0.0.1".equals(host) || "localhost".equals(host),
        "the broker at MIC_TEST_RABBITMQ_URI is not local: rabbitmqctl cannot control it");
  }

  /** Runs {@code rabbitmqctl args…} against the test broker and returns its standard output. */
  static String rabbitmqctl(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(List.of("rabbitmqctl"));
    command.addAll(List.of(args));
    if (target.container() != null) {
      Container.ExecResult r = target.container().execInContainer(command.toArray(String[]::new));
      if (r.getExitCode() != 0) {
        throw new IOException("rabbitmqctl " + String.join(" ", args) + " failed: " + r.getStderr());
      }
      return r.getStdout();
    }
    Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new IOException("rabbitmqctl " + String.join(" ", args) + " did not finish within 120 s");
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    if (p.exitValue() != 0) {
      throw new IOException("rabbitmqctl " + String.join(" ", args) + " failed (" + p.exitValue() + "): " + out);
    }
    return out;
  }
}
