package io.mic.outbox.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PublishUnavailableException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class KafkaPublisherTest {
  private String bootstrap;
  private String topic;
  private final InMemoryOutboxStore store = new InMemoryOutboxStore();

  @BeforeEach
  void createTopic() throws Exception {
    bootstrap = KafkaTestBroker.bootstrap();
    topic = KafkaTestBroker.uniqueTopic();
    KafkaTestBroker.createTopic(bootstrap, topic, 4);
  }

  @AfterEach
  void deleteTopic() throws Exception {
    KafkaTestBroker.deleteTopic(bootstrap, topic);
  }

  private KafkaPublisher.Builder publisher() {
    return KafkaPublisher.builder().bootstrapServers(bootstrap).property("linger.ms", "5");
  }

  private OutboxEvent event(String aggregateId, String payload) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload(payload).build();
  }

  @Test
  void aRecordCarriesTheKeyTheHeadersAndThePayloadBytes() throws Exception {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "42").topic(topic)
        .payload("{\"city\":\"Orléans\",\"n\":1}").header("tenant", "acme").build();
    store.append(e);
    try (KafkaPublisher publisher = publisher().build()) {
      DispatchResult r = OutboxDispatcher.builder().store(store).dispatchFn(publisher).build().dispatchOnce();
      assertThat(r.dispatched()).isEqualTo(1);
    }

    List<ConsumerRecord<byte[], byte[]>> records = TopicReader.readAtLeast(bootstrap, topic, 1);
    assertThat(records).hasSize(1);
    ConsumerRecord<byte[], byte[]> record = records.get(0);
    assertThat(new String(record.key(), UTF_8)).isEqualTo("42");
    assertThat(record.value()).isEqualTo("{\"city\":\"Orléans\",\"n\":1}".getBytes(UTF_8));
    assertThat(record.partition()).isEqualTo(Utils.toPositive(Utils.murmur2("42".getBytes(UTF_8))) % 4);
    List<String[]> headers = new ArrayList<>();
    for (Header h : record.headers()) {
      headers.add(new String[] {h.key(), new String(h.value(), UTF_8)});
    }
    assertThat(headers).extracting(h -> tuple(h[0], h[1])).containsExactly(
        tuple("tenant", "acme"),
        tuple("x-event-id", e.id().toString()),
        tuple("x-aggregate-type", "order"),
        tuple("x-aggregate-id", "42"),
        tuple("x-sequence", "1"),
        tuple("x-schema-version", "1"),
        tuple("x-occurred-at", io.mic.outbox.OutboxHeaders.iso(store.find(e.id()).orElseThrow().createdAt())));
    assertThat(KafkaHeaders.toMap(record.headers())).containsEntry("x-event-id", e.id().toString()).hasSize(7);
    assertThat(store.find(e.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DISPATCHED);
  }

  @Test
  void eachAggregateLandsOnTheOnePartitionItsKeyHashesTo() throws Exception {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      events.add(event("a-" + (i % 12), "{\"i\":" + i + "}"));
    }
    try (KafkaPublisher publisher = publisher().build()) {
      assertThat(publisher.dispatchBatch(events)).isEmpty();
    }

    List<ConsumerRecord<byte[], byte[]>> records = TopicReader.readAtLeast(bootstrap, topic, 60);
    assertThat(records).hasSize(60);
    for (ConsumerRecord<byte[], byte[]> r : records) {
      String aggregate = new String(r.headers().lastHeader("x-aggregate-id").value(), UTF_8);
      assertThat(new String(r.key(), UTF_8)).isEqualTo(aggregate);
      assertThat(r.partition()).as("partition of %s", aggregate)
          .isEqualTo(Utils.toPositive(Utils.murmur2(aggregate.getBytes(UTF_8))) % 4);
    }
    assertThat(records.stream().map(ConsumerRecord::partition).distinct().count())
        .as("12 aggregates spread over the 4 partitions").isEqualTo(4);
  }

  @Test
  void topicAndKeyFunctionsChooseTheRecordsTopicAndKey() throws Exception {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "7").topic("order.created").payload("{}").build();
    try (KafkaPublisher publisher = publisher().topicOf(ev -> topic)
        .keyOf(ev -> ev.aggregateType() + ":" + ev.aggregateId()).build()) {
      publisher.dispatch(e);
    }
    ConsumerRecord<byte[], byte[]> record = TopicReader.readAtLeast(bootstrap, topic, 1).get(0);
    assertThat(new String(record.key(), UTF_8)).isEqualTo("order:7");
    assertThat(new String(record.headers().lastHeader("x-event-id").value(), UTF_8)).isEqualTo(e.id().toString());
  }

  @Test
  void aRecordOverMaxRequestSizeIsRetriedThenDeadLetteredWithAClearError() throws Exception {
    OutboxEvent big = event("big", "{\"blob\":\"" + "x".repeat(4_000) + "\"}");
    OutboxEvent small = event("small", "{\"n\":1}");
    store.append(big);
    store.append(small);
    try (KafkaPublisher publisher = publisher().property("max.request.size", "2048").build()) {
      OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher)
          .maxAttempts(2).retryBackoff(Duration.ofMillis(1), Duration.ofMillis(1)).build();
      DispatchResult first = dispatcher.dispatchOnce();
      assertThat(first.dispatched()).isEqualTo(1);
      assertThat(first.retried()).isEqualTo(1);
      OutboxEvent retried = store.find(big.id()).orElseThrow();
      assertThat(retried.status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(retried.attempts()).isEqualTo(1);
      assertThat(retried.lastError()).contains("PublishRejectedException", "Kafka rejected event " + big.id(),
          "RecordTooLargeException", "max.request.size");

      org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
          .until(() -> dispatcher.dispatchOnce().deadLettered() == 1);
      OutboxEvent dead = store.find(big.id()).orElseThrow();
      assertThat(dead.status()).isEqualTo(OutboxStatus.DLQ);
      assertThat(dead.attempts()).isEqualTo(2);
      assertThat(dead.lastError()).contains("max.request.size");
    }
    List<ConsumerRecord<byte[], byte[]>> records = TopicReader.readAtLeast(bootstrap, topic, 1);
    assertThat(records).extracting(r -> new String(r.key(), UTF_8)).containsExactly("small");
  }

  @Test
  void aMissingTopicDelaysOnlyItsOwnEvents() throws Exception {
    String missing = KafkaTestBroker.uniqueTopic();
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      events.add(OutboxEvent.builder().aggregate("order", "m-" + i).topic(i % 2 == 0 ? missing : topic)
          .payload("{\"i\":" + i + "}").build());
    }
    try (KafkaPublisher publisher = publisher().maxBlock(Duration.ofMillis(500))
        .property("allow.auto.create.topics", "false").build()) {
      Map<UUID, Exception> failures = publisher.dispatchBatch(events);

      assertThat(failures).containsOnlyKeys(events.get(0).id(), events.get(2).id(), events.get(4).id());
      assertThat(failures.values()).allSatisfy(f -> assertThat(f).isInstanceOf(PublishUnavailableException.class)
          .hasMessageContaining("for topic '" + missing + "'"));
    }
    assertThat(TopicReader.readAtLeast(bootstrap, topic, 3)).extracting(r -> new String(r.key(), UTF_8))
        .containsExactlyInAnyOrder("m-1", "m-3", "m-5");
  }

  /**
   * Two events of two missing topics are the oldest in the outbox: each batch starts with them. Kafka
   * answers, so they are missing topics, not a broker that is down, and the events of existing topics go
   * out while the two wait for their topics.
   */
  @Test
  void twoMissingTopicsFirstInLineDoNotHoldUpTheOthers() throws Exception {
    List<OutboxEvent> missing = List.of(
        OutboxEvent.builder().aggregate("order", "a").topic(KafkaTestBroker.uniqueTopic()).payload("{}").build(),
        OutboxEvent.builder().aggregate("order", "b").topic(KafkaTestBroker.uniqueTopic()).payload("{}").build());
    store.append(missing);
    List<OutboxEvent> existing = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      existing.add(event("e-" + i, "{\"i\":" + i + "}"));
    }
    store.append(existing);
    try (KafkaPublisher publisher = publisher().maxBlock(Duration.ofMillis(500))
        .property("allow.auto.create.topics", "false").build();
        AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher)
            .retryBackoff(Duration.ofMillis(100), Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(50))
            .build()) {
      d.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> existing.stream()
          .allMatch(e -> store.find(e.id()).orElseThrow().status() == OutboxStatus.DISPATCHED));
      for (OutboxEvent e : missing) {
        OutboxEvent stored = store.find(e.id()).orElseThrow();
        assertThat(stored.status()).isEqualTo(OutboxStatus.PENDING);
        assertThat(stored.attempts()).as("a missing topic counts no attempt").isZero();
      }
    }
    assertThat(TopicReader.readAtLeast(bootstrap, topic, 10)).extracting(r -> new String(r.key(), UTF_8))
        .containsExactlyInAnyOrderElementsOf(existing.stream().map(OutboxEvent::aggregateId).toList());
  }

  @Test
  void noBrokerIsUnavailableForEveryEventAfterOneWait() throws Exception {
    int closedPort;
    try (ServerSocket s = new ServerSocket(0)) {
      closedPort = s.getLocalPort();
    }
    List<OutboxEvent> events = List.of(event("1", "{}"), event("2", "{}"), event("3", "{}"));
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers("127.0.0.1:" + closedPort)
        .maxBlock(Duration.ofMillis(500)).build()) {
      long t0 = System.nanoTime();
      Map<UUID, Exception> failures = publisher.dispatchBatch(events);
      long millis = (System.nanoTime() - t0) / 1_000_000;

      assertThat(failures).containsOnlyKeys(events.get(0).id(), events.get(1).id(), events.get(2).id());
      assertThat(failures.values()).allSatisfy(f -> assertThat(f).isInstanceOf(PublishUnavailableException.class)
          .hasMessageContaining("event " + events.get(0).id()).hasMessageContaining("TimeoutException"));
      assertThat(millis).as("one max.block.ms wait, not one per event").isLessThan(1_400);
    }
  }
}
