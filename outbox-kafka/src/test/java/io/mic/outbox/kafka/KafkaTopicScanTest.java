package io.mic.outbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.BrokerScan;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxHeaders;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;

/**
 * The topic scan of {@code mic-outbox reconcile} on a real broker: it seeks every partition by timestamp
 * (less the clock margin), and says what failed when the topic or the cluster is not there. The command's
 * end-to-end test (outbox-cli's {@code KafkaReconcileTest}) checks its use against an outbox.
 */
class KafkaTopicScanTest {

  @Test
  void readsTheEventIdsOfEveryPartitionFromTheStartTimeLessTheMargin() throws Exception {
    String bootstrap = KafkaTestBroker.bootstrap();
    String topic = KafkaTestBroker.uniqueTopic();
    KafkaTestBroker.createTopic(bootstrap, topic, 2);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName(),
        ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName()))) {
      Instant from = Instant.now();
      String old = send(producer, topic, 0, from.minus(BrokerScan.CLOCK_MARGIN).minusSeconds(60));
      String withinMargin = send(producer, topic, 1, from.minusSeconds(30)); // a producer's clock 30 s behind
      String later = send(producer, topic, 0, from.plusSeconds(1));
      KafkaTopicScan scan = new KafkaTopicScan(bootstrap, topic, Map.of());
      assertThat(scan.eventIds("event.topic", from)).containsExactlyInAnyOrder(withinMargin, later)
          .doesNotContain(old);
      assertThat(scan).hasToString("Kafka topic " + topic);
    } finally {
      KafkaTestBroker.deleteTopic(bootstrap, topic);
    }
  }

  @Test
  void aTopicTheClusterDoesNotHaveIsAConfigurationError() {
    String bootstrap = KafkaTestBroker.bootstrap();
    String missing = KafkaTestBroker.uniqueTopic();
    assertThatThrownBy(() -> new KafkaTopicScan(bootstrap, null, Map.of()).eventIds(missing, Instant.now()))
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("Kafka topic " + missing + " does not exist on " + bootstrap);
  }

  @Test
  void anUnreachableClusterFailsTheScanNamingTheTopicAndTheServers() {
    KafkaTopicScan scan = new KafkaTopicScan("127.0.0.1:1", null, Map.of("default.api.timeout.ms", "1500"));
    assertThatThrownBy(() -> scan.eventIds("order.created", Instant.now()))
        .isInstanceOf(BrokerScan.ScanFailedException.class)
        .hasMessageStartingWith("cannot read Kafka topic order.created at 127.0.0.1:1: ");
  }

  private static String send(KafkaProducer<byte[], byte[]> producer, String topic, int partition, Instant at)
      throws Exception {
    String id = UUID.randomUUID().toString();
    ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, partition, at.toEpochMilli(), null,
        "{}".getBytes(StandardCharsets.UTF_8));
    r.headers().add(OutboxHeaders.EVENT_ID, id.getBytes(StandardCharsets.UTF_8));
    producer.send(r).get(30, TimeUnit.SECONDS);
    return id;
  }
}
