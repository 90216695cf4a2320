package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StreamConfiguration;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The application's connection gives up reconnecting during an outage (the client's default is 60 tries,
 * about two minutes) and closes for good: once the server is back, the publisher publishes again by itself.
 */
class ClosedAppConnectionTest {

  @Test
  void anApplicationConnectionThatClosedForGoodDoesNotStopPublishingOnceTheServerIsBack() throws Exception {
    try (PrivateNatsServer server = PrivateNatsServer.start("max_payload: 65536")) {
      try (Connection admin = Nats.connect(server.url())) {
        admin.jetStreamManagement().addStream(StreamConfiguration.builder().name("CLOSED").subjects("closed.>")
            .build());
      }
      Connection app = Nats.connect(Options.builder().server(server.url()).maxReconnects(0).build());
      try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(app)
          .ackTimeout(Duration.ofSeconds(2)).build()) {
        assertThat(publisher.dispatchBatch(List.of(event(1)))).isEmpty();

        server.stop();
        await("the application's connection to close for good").atMost(Duration.ofSeconds(20))
            .until(() -> app.getStatus() == Connection.Status.CLOSED);
        assertThat(published(publisher, event(2))).isFalse();

        server.restart();
        OutboxEvent third = event(3);
        await("a publication once the server is back").atMost(Duration.ofSeconds(30))
            .pollInterval(Duration.ofMillis(200))
            .until(() -> published(publisher, third));
      }
      try (Connection admin = Nats.connect(server.url())) {
        assertThat(admin.jetStreamManagement().getStreamInfo("CLOSED").getStreamState().getMsgCount())
            .isEqualTo(2); // events 1 and 3: the tries of event 3 share its Nats-Msg-Id
      }
      assertThat(app.getStatus()).as("the application's connection stays as it was").isEqualTo(
          Connection.Status.CLOSED);
    }
  }

  /** Whether the publisher published {@code event}; false when it reported it unavailable, by map or throw. */
  private static boolean published(NatsJetStreamPublisher publisher, OutboxEvent event) throws Exception {
    Exception failure;
    try {
      failure = publisher.dispatchBatch(List.of(event)).get(event.id());
    } catch (PublishUnavailableException e) {
      return false;
    }
    if (failure != null) {
      assertThat(failure).isInstanceOf(PublishUnavailableException.class); // never counted against the event
    }
    return failure == null;
  }

  private static OutboxEvent event(int n) {
    return OutboxEvent.builder().aggregate("order", "o-" + n).topic("closed.created").payload("{\"n\":" + n + "}")
        .build();
  }
}
