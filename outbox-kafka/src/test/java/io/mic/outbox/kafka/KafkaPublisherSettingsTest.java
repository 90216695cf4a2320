package io.mic.outbox.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.InvalidConfigurationException;
import java.time.Duration;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The builder refuses settings that break ordering or durability; no broker is needed to see it. */
class KafkaPublisherSettingsTest {
  private static final String SECRET_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
      + " username=\"svc\" password=\"s3cr3t-pw\";";

  @ParameterizedTest
  @CsvSource({
      "acks, 1, must be 'all'",
      "acks, 0, must be 'all'",
      "enable.idempotence, false, must be 'true'",
      "max.in.flight.requests.per.connection, 6, must be between 1 and 5",
      "retries, 0, must be > 0",
      "transactional.id, tx-1, is not supported",
      "value.serializer, org.apache.kafka.common.serialization.StringSerializer, must be org.apache.kafka",
      "delivery.timeout.ms, soon, must be a number of milliseconds"})
  void aSettingThatBreaksOrderingOrDurabilityIsRefusedByName(String name, String value, String why) {
    assertThatThrownBy(() -> KafkaPublisher.builder().bootstrapServers("127.0.0.1:9092")
        .property("sasl.jaas.config", SECRET_JAAS).property(name, value).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageStartingWith("producer setting " + name + "=" + value + " " + why)
        .message().doesNotContain("s3cr3t-pw");
  }

  @Test
  void theSettingsThatKeepOrderAndDurabilityAreAccepted() {
    try (KafkaPublisher p = KafkaPublisher.builder().bootstrapServers("127.0.0.1:9092")
        .property("acks", "-1").property("enable.idempotence", "true")
        .property("max.in.flight.requests.per.connection", "5").property("compression.type", "lz4").build()) {
      assertThat(p).isNotNull();
    }
  }

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "svc:S3cret@127.0.0.1:9092 | ***@127.0.0.1:9092",
      "SASL_SSL://svc:S3cret@kafka-1:9093,kafka-2:9093 | SASL_SSL://***@kafka-1:9093,kafka-2:9093"})
  void credentialsInABootstrapAddressAreRefusedWithoutBeingRepeated(String servers, String masked) {
    // Kafka does not read them; it would log them with its settings and repeat them in its messages
    assertThatThrownBy(() -> KafkaPublisher.builder().bootstrapServers(servers).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("bootstrapServers '" + masked + "' holds credentials, which Kafka does not read: give host:port"
            + " only, and the credentials through property(\"sasl.jaas.config\", …)")
        .message().doesNotContain("S3cret");
    assertThatThrownBy(() -> new KafkaTopicScan(servers, null, java.util.Map.of()))
        .isInstanceOf(InvalidConfigurationException.class).message().doesNotContain("S3cret");
  }

  @Test
  void aProducerThatCannotBeCreatedSaysWhyDownToTheRootCause() {
    String unterminated = SECRET_JAAS.substring(0, SECRET_JAAS.length() - 1); // the ';' forgotten
    assertThatThrownBy(() -> KafkaPublisher.builder().bootstrapServers("127.0.0.1:9092")
        .property("security.protocol", "SASL_PLAINTEXT").property("sasl.mechanism", "PLAIN")
        .property("sasl.jaas.config", unterminated).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("the Kafka producer could not be created: Failed to construct kafka producer; caused by: Failed"
            + " to create new NetworkClient; JAAS config entry not terminated by semi-colon")
        .message().doesNotContain("s3cr3t-pw");
  }

  @Test
  void bootstrapServersAreRequired() {
    assertThatThrownBy(() -> KafkaPublisher.builder().property("linger.ms", "5").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("bootstrapServers is required: .bootstrapServers(\"127.0.0.1:9092\") or .producer(existingProducer)");
  }

  @Test
  void aProducerAndSettingsTogetherAreRefused() {
    MockProducer<byte[], byte[]> producer = new MockProducer<>(true, null, new ByteArraySerializer(),
        new ByteArraySerializer());
    assertThatThrownBy(() -> KafkaPublisher.builder().producer(producer).property("linger.ms", "5").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("set either producer or bootstrapServers/property, not both")
        .hasMessageContaining("[linger.ms]");
  }

  @Test
  void aDeliveryTimeoutShorterThanOneRequestIsRefused() {
    assertThatThrownBy(() -> KafkaPublisher.builder().bootstrapServers("127.0.0.1:9092")
        .deliveryTimeout(Duration.ofSeconds(2)).requestTimeout(Duration.ofSeconds(3)).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("delivery.timeout.ms (2000 ms) must be at least request.timeout.ms + linger.ms (3005 ms):"
            + " raise deliveryTimeout or lower requestTimeout");
  }

  @Test
  void aProducerTheClientCannotCreateIsReportedWithoutTheSecretSettings() {
    assertThatThrownBy(() -> KafkaPublisher.builder().bootstrapServers("127.0.0.1:9092")
        .property("compression.type", "zip").property("sasl.jaas.config", SECRET_JAAS).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageStartingWith("the Kafka producer could not be created: ")
        .hasMessageContaining("compression.type")
        .message().doesNotContain("s3cr3t-pw");
  }
}
