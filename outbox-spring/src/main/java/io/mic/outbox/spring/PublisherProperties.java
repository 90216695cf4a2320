package io.mic.outbox.spring;

import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The {@code mic.outbox.nats.*}, {@code mic.outbox.rabbitmq.*} and {@code mic.outbox.kafka.*} properties: the
 * publisher the auto-configuration builds when the application declares no {@code DispatchFn} bean and the
 * broker's module is on the classpath. Set one broker's; an application that needs more (a {@code
 * connectionFactory}, a routing-key function) declares its publisher as a bean instead, and these are ignored.
 *
 * <p>Their {@code toString()} leaves out the URLs and the Kafka settings' values: a record's would print them,
 * and with them a password.
 */
public final class PublisherProperties {
  private PublisherProperties() {}

  /**
   * {@code mic.outbox.nats.*}: a {@code NatsJetStreamPublisher} (module {@code outbox-nats}).
   *
   * @param url The NATS server URL, e.g. nats://127.0.0.1:4222; setting it creates the publisher.
   * @param subjectPrefix Prepended with a dot to every topic to make the subject, e.g. acme.
   * @param topics Topics the application publishes, or topic prefixes as order.>: at start, each subject must be
   *     captured by a JetStream stream (unless mic.outbox.startup-check=false).
   */
  public record Nats(String url, String subjectPrefix, @DefaultValue List<String> topics) {
    @Override
    public String toString() {
      return "Nats[url=" + hidden(url) + ", subjectPrefix=" + subjectPrefix + ", topics=" + topics + "]";
    }
  }

  /**
   * {@code mic.outbox.rabbitmq.*}: a {@code RabbitMqPublisher} (module {@code outbox-rabbitmq}).
   *
   * @param uri The AMQP URI, e.g. amqp://user:secret@rabbit:5672/vhost; setting it creates the publisher.
   * @param addresses The nodes of a cluster, e.g. rabbit1:5672,rabbit2:5672,rabbit3:5672, in place of the host and
   *     port of the uri, which still gives the credentials, virtual host and TLS; each connection goes to the first
   *     node that accepts it, so losing the connected node costs a reconnection to the next.
   * @param exchange The exchange events are published to (routing key = topic); it must exist at start.
   */
  public record RabbitMq(String uri, String addresses, String exchange) {
    @Override
    public String toString() {
      return "RabbitMq[uri=" + hidden(uri) + ", addresses=" + addresses + ", exchange=" + exchange + "]";
    }
  }

  /**
   * {@code mic.outbox.kafka.*}: a {@code KafkaPublisher} (module {@code outbox-kafka}).
   *
   * @param bootstrapServers The bootstrap servers, e.g. kafka-1:9092,kafka-2:9092; setting them creates the
   *     publisher.
   * @param properties Any producer setting (linger.ms, security.protocol, sasl.jaas.config, …).
   * @param topics Topics the application publishes: at start, each must exist (unless
   *     mic.outbox.startup-check=false).
   */
  public record Kafka(String bootstrapServers, @DefaultValue Map<String, String> properties,
      @DefaultValue List<String> topics) {
    @Override
    public String toString() {
      return "Kafka[bootstrapServers=" + bootstrapServers + ", properties="
          + (properties == null ? null : properties.keySet()) + ", topics=" + topics + "]";
    }
  }

  private static String hidden(String value) {
    return value == null ? null : "***";
  }
}
