package io.mic.outbox.spring;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code mic.outbox.nats.*}, {@code mic.outbox.rabbitmq.*} and {@code mic.outbox.kafka.*} properties: the
 * publisher the auto-configuration builds when the application declares no {@code DispatchFn} bean and the
 * broker's module is on the classpath. Set one broker's; an application that needs more (a {@code
 * connectionFactory}, a routing-key function) declares its publisher as a bean instead, and these are ignored.
 */
public final class PublisherProperties {
  private PublisherProperties() {}

  /** {@code mic.outbox.nats.*}: a {@code NatsJetStreamPublisher} (module {@code outbox-nats}). */
  public static class Nats {
    /** The NATS server URL, e.g. nats://127.0.0.1:4222; setting it creates the publisher. */
    private String url;
    /** Prepended with a dot to every topic to make the subject, e.g. acme. */
    private String subjectPrefix;
    /**
     * Topics the application publishes, or topic prefixes as order.>: at start, each subject must be
     * captured by a JetStream stream (unless mic.outbox.startup-check=false).
     */
    private List<String> topics = new ArrayList<>();

    public String getUrl() {
      return url;
    }

    public void setUrl(String url) {
      this.url = url;
    }

    public String getSubjectPrefix() {
      return subjectPrefix;
    }

    public void setSubjectPrefix(String subjectPrefix) {
      this.subjectPrefix = subjectPrefix;
    }

    public List<String> getTopics() {
      return topics;
    }

    public void setTopics(List<String> topics) {
      this.topics = topics;
    }
  }

  /** {@code mic.outbox.rabbitmq.*}: a {@code RabbitMqPublisher} (module {@code outbox-rabbitmq}). */
  public static class RabbitMq {
    /** The AMQP URI, e.g. amqp://user:secret@rabbit:5672/vhost; setting it creates the publisher. */
    private String uri;
    /**
     * The nodes of a cluster, e.g. rabbit1:5672,rabbit2:5672,rabbit3:5672, in place of the host and port of the
     * uri, which still gives the credentials, virtual host and TLS; each connection goes to the first node that
     * accepts it, so losing the connected node costs a reconnection to the next.
     */
    private String addresses;
    /** The exchange events are published to (routing key = topic); it must exist at start. */
    private String exchange;

    public String getUri() {
      return uri;
    }

    public void setUri(String uri) {
      this.uri = uri;
    }

    public String getAddresses() {
      return addresses;
    }

    public void setAddresses(String addresses) {
      this.addresses = addresses;
    }

    public String getExchange() {
      return exchange;
    }

    public void setExchange(String exchange) {
      this.exchange = exchange;
    }
  }

  /** {@code mic.outbox.kafka.*}: a {@code KafkaPublisher} (module {@code outbox-kafka}). */
  public static class Kafka {
    /** The bootstrap servers, e.g. kafka-1:9092,kafka-2:9092; setting them creates the publisher. */
    private String bootstrapServers;
    /** Any producer setting (linger.ms, security.protocol, sasl.jaas.config, …). */
    private Map<String, String> properties = new LinkedHashMap<>();
    /** Topics the application publishes: at start, each must exist (unless mic.outbox.startup-check=false). */
    private List<String> topics = new ArrayList<>();

    public String getBootstrapServers() {
      return bootstrapServers;
    }

    public void setBootstrapServers(String bootstrapServers) {
      this.bootstrapServers = bootstrapServers;
    }

    public Map<String, String> getProperties() {
      return properties;
    }

    public void setProperties(Map<String, String> properties) {
      this.properties = properties;
    }

    public List<String> getTopics() {
      return topics;
    }

    public void setTopics(List<String> topics) {
      this.topics = topics;
    }
  }
}
