package io.mic.replay;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** No password of any server in a NATS URL list reaches a message. */
class NatsReplayRedactionTest {
  private static final ReplayQuery QUERY = new ReplayQuery("orders.created",
      Instant.parse("2026-09-29T08:00:00Z"), Instant.parse("2026-09-29T09:00:00Z"));

  @Test
  void everyServerOfAnUnreachableListIsShownWithoutItsPassword() throws Exception {
    try (NatsJetStreamPublisher nats = NatsJetStreamPublisher.builder()
        .url("nats://replayer:first-s3cret@127.0.0.1:1,nats://replayer:second-s3cret@127.0.0.1:2")
        .expectedStream("ORDERS").connectTimeout(Duration.ofMillis(300)).build()) {

      assertThatThrownBy(() -> PublisherSink.of(nats).prepare(QUERY))
          .isInstanceOf(ReplaySinkException.class)
          .hasMessageStartingWith("cannot use JetStream at nats://***@127.0.0.1:1,nats://***@127.0.0.1:2 (")
          .hasMessageNotContaining("s3cret");
    }
  }

  @Test
  void aUrlTheClientCannotParseIsShownWithoutItsPassword() {
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().url("nats://u:p1@h1:4222,nats://u:p/2@h2:bad")
        .expectedStream("ORDERS").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("url 'nats://***@h1:4222,nats://***@h2:bad' is not a NATS server URL: use e.g."
            + " nats://127.0.0.1:4222");
  }
}
