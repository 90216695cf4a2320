package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.nats.internal.ConnectionSource;
import io.nats.client.Connection;
import java.time.Duration;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The connections a publisher (live or replaying) opens for itself. */
class ConnectionSourceTest {
  static Stream<Function<String, ConnectionSource>> ownConnections() {
    Duration second = Duration.ofSeconds(1);
    return Stream.of(url -> ConnectionSource.connectingTo(url, "mic-outbox-test", second, second));
  }

  /**
   * The client's default ends a write after every request (a JetStream publication is one), so a write
   * carries at most two messages: 100,000 events took 53,970 writes, and NATS and the JVM spent about twice
   * the CPU per message of what the same messages cost in writes of many (EndToEndBenchmark's figures are in
   * docs/performance.md).
   */
  @ParameterizedTest
  @MethodSource("ownConnections")
  void theOwnConnectionLetsTheMessagesOfABatchShareWrites(Function<String, ConnectionSource> open)
      throws Exception {
    NatsTestServer.connect().close(); // fails or skips the test when no server runs
    try (ConnectionSource source = open.apply(NatsTestServer.url())) {
      Connection connection = source.session().connection();

      assertThat(connection.getOptions().forceFlushOnRequest()).isFalse();
    }
  }
}
