package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StreamConfiguration;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * A three-node JetStream cluster loses the quorum of a replicated stream: the publisher must say that the stream
 * (or JetStream) has no leader, as unavailable, and never send the operator to create a stream that exists.
 */
class NatsFailoverMessageTest {

  @Test
  void aStreamWithoutQuorumIsNotReportedAsMissing() throws Exception {
    try (PrivateNatsCluster cluster = PrivateNatsCluster.start()) {
      try (Connection admin = Nats.connect(cluster.url(0))) {
        await("a JetStream meta leader").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(500))
            .ignoreExceptions().until(() -> admin.jetStreamManagement().addStream(StreamConfiguration.builder()
                .name("FAILOVER").subjects("failover.>").replicas(3).build()) != null);
      }
      try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(cluster.url(0))
          .ackTimeout(Duration.ofSeconds(1)).build()) {
        await("a publication to the replicated stream").atMost(Duration.ofSeconds(30)).ignoreExceptions()
            .until(() -> publisher.dispatchBatch(List.of(event())).isEmpty());

        cluster.kill(1);
        cluster.kill(2);
        List<String> failures = new CopyOnWriteArrayList<>();
        await("a failure that names the missing leader").atMost(Duration.ofSeconds(60))
            .pollInterval(Duration.ofMillis(200)).until(() -> {
              OutboxEvent event = event();
              Exception failure = publisher.dispatchBatch(List.of(event)).get(event.id());
              if (failure == null) {
                return false;
              }
              assertThat(failure).isInstanceOf(PublishUnavailableException.class);
              failures.add(failure.getMessage());
              return failure.getMessage().contains("leader");
            });
        assertThat(failures).as("what the publisher said while the stream had no quorum")
            .noneMatch(m -> m.contains("create one"));
        System.out.println("without quorum: " + failures.get(failures.size() - 1));
      }
    }
  }

  private static OutboxEvent event() {
    return OutboxEvent.builder().aggregate("order", "o-1").topic("failover.changed").payload("{}").build();
  }
}
