package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.SchemaVersions;
import io.nats.client.Connection;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link NatsConsumers} on a real JetStream consumer. */
class NatsConsumersTest {
  private Connection nats;
  private String stream;
  private JetStreamSubscription sub;
  private final List<String> applied = new ArrayList<>();
  private final List<Long> poisonDeliveries = new ArrayList<>();
  private final List<DeliveryOutcome> outcomes = new ArrayList<>();

  @BeforeEach
  void connect() throws Exception {
    nats = NatsTestServer.connect();
    stream = NatsTestServer.uniqueName();
    NatsTestServer.createStream(nats, stream, s -> s);
    sub = nats.jetStream().subscribe(stream + ".>", PullSubscribeOptions.builder().configuration(
        ConsumerConfiguration.builder().ackPolicy(AckPolicy.Explicit).build()).build());
  }

  @AfterEach
  void cleanUp() throws Exception {
    NatsTestServer.deleteStream(nats, stream);
    nats.close();
  }

  @Test
  void aMessageWhoseHandlerAlwaysFailsDoesNotHoldBackTheMessagesBehindIt() throws Exception {
    OutboxEvent poison = OutboxEvent.builder().aggregate("order", "1").topic(stream + ".created").payload("{}").build();
    OutboxEvent good = OutboxEvent.builder().aggregate("order", "2").topic(stream + ".created").payload("{}").build();
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).build()) {
      publisher.dispatch(poison);
      publisher.dispatch(good);
    }

    // a consumer that handles one message at a time, as an ordered one does
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
      for (Message m : sub.fetch(1, Duration.ofMillis(200))) {
        DeliveryOutcome outcome = NatsConsumers.handle(m, id -> {
          if (id.equals(poison.id().toString())) {
            poisonDeliveries.add(m.metaData().deliveredCount());
            throw new IllegalStateException("cannot parse the order");
          }
          return applied.add(id);
        });
        outcomes.add(outcome); // the poison message: nak-ed, delivered again later
      }
      assertThat(applied).as("applied while the poison message was delivered %d times", poisonDeliveries.size())
          .contains(good.id().toString());
    });

    assertThat(applied).containsExactly(good.id().toString());
    assertThat(outcomes).containsExactly(DeliveryOutcome.REDELIVERED, DeliveryOutcome.APPLIED);
    assertThat(poisonDeliveries).containsExactly(1L); // the good message came before any redelivery
    // not lost: the failed message comes back once its redelivery delay has passed
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      for (Message m : sub.fetch(1, Duration.ofMillis(200))) {
        assertThat(NatsConsumers.idempotencyKey(m)).isEqualTo(poison.id().toString());
        poisonDeliveries.add(m.metaData().deliveredCount());
        m.ack();
      }
      return poisonDeliveries.size() == 2;
    });
    assertThat(poisonDeliveries).containsExactly(1L, 2L);
  }

  /**
   * A message whose event id no inbox can keep (too long, here; NATS trims header values, so a padded one
   * cannot arrive) would fail the inbox on every delivery: the helper terminates it instead of handing it to
   * the handler, and the message behind it is handled.
   */
  @Test
  void aMessageWhoseEventIdNoInboxCanKeepIsTerminatedNotRetried() throws Exception {
    String tooLong = "e".repeat(OutboxHeaders.MAX_KEY_LENGTH + 1);
    Headers headers = new Headers().put(OutboxHeaders.EVENT_ID, tooLong);
    nats.jetStream().publish(NatsMessage.builder().subject(stream + ".created").headers(headers).data("{}")
        .build());
    OutboxEvent good = OutboxEvent.builder().aggregate("order", "2").topic(stream + ".created").payload("{}").build();
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).build()) {
      publisher.dispatch(good);
    }
    List<String> refused = new ArrayList<>();

    await().atMost(Duration.ofSeconds(10)).until(() -> {
      for (Message m : sub.fetch(1, Duration.ofMillis(200))) {
        if (applied.isEmpty() && refused.isEmpty()) {
          refused.add(catchThrowableOfType(OutboxException.class, () -> NatsConsumers.idempotencyKey(m)).getMessage());
        }
        outcomes.add(NatsConsumers.handle(m, applied::add));
      }
      return applied.contains(good.id().toString());
    });

    assertThat(applied).containsExactly(good.id().toString());
    assertThat(outcomes).containsExactly(DeliveryOutcome.REJECTED, DeliveryOutcome.APPLIED);
    assertThat(refused).containsExactly("the message on " + stream + ".created carries an event id no inbox can keep:"
        + " its event id is 256 characters long, the limit is 255: '" + "e".repeat(40) + "…'");
    // ack() and term() are not waited for: the server settles them a moment after the helper returns
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(sub.getConsumerInfo().getNumAckPending())
        .as("nothing waits to be delivered again").isZero());
  }

  /**
   * A consumer that reads version 1 of the topic is handed a version-2 event: it is neither applied nor acked,
   * and JetStream delivers it again; the version-1 event is applied. Once the consumer reads version 2 (it was
   * "deployed"), the redelivered event is applied, once.
   */
  @Test
  void anEventNewerThanTheConsumerReadsComesBackUntilAConsumerThatReadsItAppliesItOnce() throws Exception {
    String topic = stream + ".created";
    OutboxEvent v1 = OutboxEvent.builder().aggregate("order", "1").topic(topic).payload("{}").build();
    OutboxEvent v2 = OutboxEvent.builder().aggregate("order", "2").topic(topic).schemaVersion(2).payload("{}").build();
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).build()) {
      publisher.dispatch(v1);
      publisher.dispatch(v2);
    }
    List<Long> refusedDeliveries = new ArrayList<>();
    SchemaVersions before = SchemaVersions.upTo(1);

    await().atMost(Duration.ofSeconds(15)).until(() -> {
      for (Message m : sub.fetch(1, Duration.ofMillis(200))) {
        DeliveryOutcome outcome = NatsConsumers.handle(m, before, applied::add);
        if (outcome == DeliveryOutcome.REDELIVERED) {
          refusedDeliveries.add(m.metaData().deliveredCount());
        }
        outcomes.add(outcome);
      }
      return refusedDeliveries.size() == 2;
    });
    assertThat(applied).containsExactly(v1.id().toString());
    assertThat(refusedDeliveries).as("not acked: delivered again").containsExactly(1L, 2L);

    SchemaVersions upgraded = before.topic(topic, 2);
    await().atMost(Duration.ofSeconds(15)).until(() -> {
      for (Message m : sub.fetch(1, Duration.ofMillis(200))) {
        outcomes.add(NatsConsumers.handle(m, upgraded, applied::add));
      }
      return applied.size() == 2;
    });
    assertThat(applied).containsExactly(v1.id().toString(), v2.id().toString());
    assertThat(outcomes).containsExactly(DeliveryOutcome.APPLIED, DeliveryOutcome.REDELIVERED,
        DeliveryOutcome.REDELIVERED, DeliveryOutcome.APPLIED);
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(sub.getConsumerInfo().getNumAckPending())
        .as("acked: never delivered again").isZero());
    assertThat(sub.getConsumerInfo().getNumPending()).isZero();
  }
}
