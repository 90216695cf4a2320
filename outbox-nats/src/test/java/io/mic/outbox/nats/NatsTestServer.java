package io.mic.outbox.nats;

import static org.junit.jupiter.api.Assertions.fail;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Assumptions;

/**
 * The NATS JetStream server the tests use: {@code MIC_TEST_NATS_URL}, else the local one. When it cannot
 * be reached the test fails under {@code CI=true} and is skipped elsewhere.
 */
final class NatsTestServer {
  static final String DEFAULT_URL = "nats://127.0.0.1:4222";

  private NatsTestServer() {}

  static String url() {
    String url = System.getenv("MIC_TEST_NATS_URL");
    return url == null || url.isBlank() ? DEFAULT_URL : url;
  }

  /** A fresh connection to the test server; fails or skips the test when there is none. */
  static Connection connect() throws InterruptedException {
    try {
      Connection c = Nats.connect(Options.builder().server(url()).connectionTimeout(Duration.ofSeconds(2))
          .maxReconnects(0).build());
      c.jetStreamManagement().getAccountStatistics(); // JetStream must be enabled, not just core NATS
      return c;
    } catch (IOException | JetStreamApiException e) {
      String message = "NATS JetStream is not reachable at " + url() + " (" + e + "): start it with"
          + " 'nats-server -js' or set MIC_TEST_NATS_URL";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        fail(message);
      }
      Assumptions.abort(message);
      throw new AssertionError(message);
    }
  }

  /** A unique subject root, e.g. {@code t3f9a...}, so parallel runs never share streams. */
  static String uniqueName() {
    return "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 16).toLowerCase(Locale.ROOT);
  }

  /** Creates a file stream named {@code name} capturing {@code name.>}, with test-specific options. */
  static void createStream(Connection c, String name, UnaryOperator<StreamConfiguration.Builder> custom)
      throws IOException, JetStreamApiException {
    StreamConfiguration.Builder config = StreamConfiguration.builder().name(name).subjects(name + ".>");
    c.jetStreamManagement().addStream(custom.apply(config).build());
  }

  static void deleteStream(Connection c, String name) throws IOException {
    JetStreamManagement jsm = c.jetStreamManagement();
    try {
      jsm.deleteStream(name);
    } catch (JetStreamApiException e) {
      // already gone: nothing to clean up
    }
  }
}
