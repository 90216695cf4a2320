package io.mic.replay;

import static org.junit.jupiter.api.Assertions.fail;

import com.rabbitmq.client.ConnectionFactory;
import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import org.junit.jupiter.api.Assumptions;

/**
 * The servers the replay tests talk to: {@code MIC_TEST_NATS_URL} / {@code MIC_TEST_CLICKHOUSE_URL} /
 * {@code MIC_TEST_RABBITMQ_URI}, else
 * the local ones. When a server cannot be reached the test fails under {@code CI=true} (CI must run
 * everything) and is skipped elsewhere, with a message that says how to start it.
 */
final class TestServices {
  private static final HttpClient HTTP = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(3)).build();

  private TestServices() {}

  static String natsUrl() {
    return env("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");
  }

  static String clickHouseUrl() {
    return env("MIC_TEST_CLICKHOUSE_URL", "http://127.0.0.1:8123");
  }

  /** A connection to NATS with JetStream; fails or skips the test when there is none. */
  static Connection nats() throws InterruptedException {
    try {
      Connection c = Nats.connect(Options.builder().server(natsUrl()).connectionTimeout(Duration.ofSeconds(2))
          .maxReconnects(0).build());
      c.jetStreamManagement().getAccountStatistics();
      return c;
    } catch (IOException | JetStreamApiException e) {
      return unavailable("NATS JetStream is not reachable at " + natsUrl() + " (" + e + "): start it with"
          + " 'nats-server -js' or set MIC_TEST_NATS_URL");
    }
  }

  static String rabbitUri() {
    return env("MIC_TEST_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672");
  }

  /** A connection to RabbitMQ; fails or skips the test when there is none. */
  static com.rabbitmq.client.Connection rabbit() {
    try {
      ConnectionFactory f = new ConnectionFactory();
      f.setUri(rabbitUri());
      f.setConnectionTimeout(2_000);
      f.setAutomaticRecoveryEnabled(false);
      return f.newConnection("mic-events-replay-test");
    } catch (Exception e) {
      return unavailable("RabbitMQ is not reachable at " + rabbitUri().replaceAll("//[^@/]*@", "//***@") + " ("
          + e.getClass().getSimpleName() + "): start it with 'rabbitmq-server -detached' or set MIC_TEST_RABBITMQ_URI");
    }
  }

  /** Checks ClickHouse answers; fails or skips the test when it does not. */
  static void requireClickHouse() throws InterruptedException {
    try {
      HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(clickHouseUrl() + "/ping"))
          .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
      if (r.statusCode() != 200) {
        unavailable("ClickHouse at " + clickHouseUrl() + " answered HTTP " + r.statusCode() + " to /ping");
      }
    } catch (IOException e) {
      unavailable("ClickHouse is not reachable at " + clickHouseUrl() + " (" + e + "): install and start it as"
          + " outbox-replay/NOTES-FOR-CI.md says, or set MIC_TEST_CLICKHOUSE_URL");
    }
  }

  /** Runs a statement on the test ClickHouse and returns the answer's text. */
  static String clickHouse(String sql) throws IOException, InterruptedException {
    HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(clickHouseUrl() + "/"))
        .timeout(Duration.ofSeconds(30))
        .POST(HttpRequest.BodyPublishers.ofString(sql, StandardCharsets.UTF_8)).build(),
        HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    if (r.statusCode() != 200) {
      throw new IOException("ClickHouse refused the test statement: " + r.body());
    }
    return r.body();
  }

  /** A unique lower-case name such as {@code t3f9a0c1d2e3f4a5b}, for streams, subjects and tables. */
  static String uniqueName() {
    return "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
  }

  private static <T> T unavailable(String message) {
    if ("true".equalsIgnoreCase(System.getenv("CI"))) {
      fail(message);
    }
    Assumptions.abort(message);
    throw new AssertionError(message);
  }

  private static String env(String name, String otherwise) {
    String value = System.getenv(name);
    return value == null || value.isBlank() ? otherwise : value;
  }
}
