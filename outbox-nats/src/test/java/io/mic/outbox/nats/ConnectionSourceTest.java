package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.nats.internal.ConnectionSource;
import io.nats.client.Connection;
import java.time.Duration;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** The connections a publisher or a replay opens for itself. */
class ConnectionSourceTest {
  static Stream<Function<String, ConnectionSource>> ownConnections() {
    Duration second = Duration.ofSeconds(1);
    return Stream.of(url -> ConnectionSource.connectingTo(url, "mic-outbox-test", second, second),
        url -> ConnectionSource.connectingOnce(url, "mic-outbox-test", second, second));
  }

  /**
   * The client's default sends every request (a JetStream publication is one) in a write of its own, with at
   * most one more message: a batch of 500 took about 250 writes, and NATS about 250 reads, at about twice the
   * CPU per message on both sides of what the same messages cost in a few writes.
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
