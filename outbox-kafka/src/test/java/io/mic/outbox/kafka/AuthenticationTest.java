package io.mic.outbox.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;

/**
 * Credentials that Kafka refuses at first and accepts later (a user created after the service started, a
 * password rotated on the broker after the client): the events wait without counting attempts, and go out
 * once Kafka accepts the credentials, without a restart.
 */
class AuthenticationTest {
  private static final int EVENTS = 20;

  @Test
  void eventsGoOutOnceKafkaAcceptsCredentialsItRefusedAtFirst() throws Exception {
    KafkaTestBroker.ChildBroker broker = KafkaTestBroker.child();
    String topic = KafkaTestBroker.uniqueTopic();
    KafkaTestBroker.createTopic(broker.bootstrap(), topic, 2);
    String user = "late-" + UUID.randomUUID().toString().substring(0, 8);
    String password = UUID.randomUUID().toString();
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    List<String> expected = new ArrayList<>();
    for (int i = 0; i < EVENTS; i++) {
      expected.add("{\"i\":" + i + "}");
      store.append(OutboxEvent.builder().aggregate("order", "o-" + (i % 5)).topic(topic)
          .payload(expected.get(i)).build());
    }
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(broker.scramBootstrap())
        .property("security.protocol", "SASL_PLAINTEXT")
        .property("sasl.mechanism", KafkaTestBroker.ChildBroker.SCRAM_MECHANISM)
        .property("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
            + " username=\"" + user + "\" password=\"" + password + "\";")
        .deliveryTimeout(Duration.ofMillis(2_500)).requestTimeout(Duration.ofMillis(1_000))
        .maxBlock(Duration.ofMillis(1_000)).build();
        AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher)
            .maxAttempts(1) // a single counted attempt would move the event to the DLQ at once
            .retryBackoff(Duration.ofMillis(100), Duration.ofMillis(500))
            .batchSize(10).pollInterval(Duration.ofMillis(20)).build()) {
      dispatcher.start();
      await("Kafka to refuse the unknown user").atMost(Duration.ofSeconds(30))
          .until(() -> publisher.dispatchBatch(List.of(probe(topic))).size() == 1);
      assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 0L)
          .containsEntry(OutboxStatus.DLQ, 0L);

      createUser(broker.bootstrap(), user, password);
      await("every event to go out with the credentials Kafka now accepts").atMost(Duration.ofSeconds(60))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == EVENTS);
    }
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DLQ, 0L).containsEntry(OutboxStatus.PENDING, 0L);
    List<ConsumerRecord<byte[], byte[]>> records = TopicReader.readAtLeast(broker.bootstrap(), topic, EVENTS);
    assertThat(records).extracting(r -> new String(r.value(), UTF_8)) // at least once: a duplicate is allowed
        .containsOnlyElementsOf(expected).containsAll(expected);
    KafkaTestBroker.deleteTopic(broker.bootstrap(), topic);
  }

  private static OutboxEvent probe(String topic) {
    return OutboxEvent.builder().aggregate("probe", "p").topic(topic).payload("{}").build();
  }

  private static void createUser(String bootstrap, String user, String password) throws Exception {
    try (Admin admin = KafkaTestBroker.admin(bootstrap)) {
      admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
          new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password))).all().get(30, TimeUnit.SECONDS);
    }
  }
}
