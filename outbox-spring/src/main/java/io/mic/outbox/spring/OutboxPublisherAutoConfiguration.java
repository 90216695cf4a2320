package io.mic.outbox.spring;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.AnyNestedCondition;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;

/**
 * The publisher built from properties, when the application declares no {@link DispatchFn} bean (its own
 * always wins) and the broker's module is on the classpath: {@code mic.outbox.nats.url} builds a
 * {@link NatsJetStreamPublisher}, {@code mic.outbox.rabbitmq.uri} with {@code mic.outbox.rabbitmq.exchange} (and
 * optionally a cluster's nodes in {@code mic.outbox.rabbitmq.addresses}) a {@link RabbitMqPublisher}, {@code mic.outbox.kafka.bootstrap-servers} (with {@code mic.outbox.kafka.properties.*})
 * a {@link KafkaPublisher}. Unless {@code mic.outbox.startup-check=false}, the broker and the destination are
 * checked before the application starts ({@link PublisherStartupCheck}).
 */
@AutoConfiguration(before = OutboxAutoConfiguration.class)
@ConditionalOnProperty(prefix = "mic.outbox", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(OutboxProperties.class)
public class OutboxPublisherAutoConfiguration {

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.mic.outbox.nats.NatsJetStreamPublisher")
  @ConditionalOnProperty(prefix = "mic.outbox.nats", name = "url")
  static class NatsPublisherConfiguration {

    @Bean
    @ConditionalOnMissingBean(DispatchFn.class)
    NatsJetStreamPublisher outboxPublisher(OutboxProperties properties) {
      PublisherStartupCheck.requireOneBroker(properties);
      PublisherProperties.Nats nats = properties.nats();
      NatsJetStreamPublisher publisher = PublisherStartupCheck.built("mic.outbox.nats",
          () -> NatsJetStreamPublisher.builder().url(nats.url()).subjectPrefix(nats.subjectPrefix()).build());
      if (properties.startupCheck()) {
        PublisherStartupCheck.run(publisher, "mic.outbox.nats.url", "mic.outbox.nats.topics",
            () -> publisher.checkStreams(nats.topics()));
      }
      return publisher;
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.mic.outbox.rabbitmq.RabbitMqPublisher")
  @Conditional(RabbitMqPublisherConfiguration.UriOrAddresses.class)
  static class RabbitMqPublisherConfiguration {

    @Bean
    @ConditionalOnMissingBean(DispatchFn.class)
    RabbitMqPublisher outboxPublisher(OutboxProperties properties) {
      PublisherStartupCheck.requireOneBroker(properties);
      PublisherProperties.RabbitMq rabbit = properties.rabbitmq();
      if (rabbit.uri() == null) {
        throw new InvalidConfigurationException("invalid mic.outbox configuration: mic.outbox.rabbitmq.addresses is"
            + " set without mic.outbox.rabbitmq.uri, which gives the credentials and virtual host: set e.g."
            + " mic.outbox.rabbitmq.uri=amqp://user:secret@rabbit1:5672/vhost");
      }
      RabbitMqPublisher publisher = PublisherStartupCheck.built("mic.outbox.rabbitmq",
          () -> RabbitMqPublisher.builder().uri(rabbit.uri()).addresses(rabbit.addresses())
              .exchange(rabbit.exchange()).build());
      if (properties.startupCheck()) {
        PublisherStartupCheck.run(publisher, rabbit.addresses() == null ? "mic.outbox.rabbitmq.uri"
            : "mic.outbox.rabbitmq.addresses", "mic.outbox.rabbitmq.exchange", publisher::checkExchange);
      }
      return publisher;
    }

    /** Either property asks for the publisher: addresses without the uri fail the start rather than go unused. */
    static final class UriOrAddresses extends AnyNestedCondition {
      UriOrAddresses() {
        super(ConfigurationPhase.PARSE_CONFIGURATION);
      }

      @ConditionalOnProperty(prefix = "mic.outbox.rabbitmq", name = "uri")
      static final class Uri {}

      @ConditionalOnProperty(prefix = "mic.outbox.rabbitmq", name = "addresses")
      static final class Addresses {}
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "io.mic.outbox.kafka.KafkaPublisher")
  @ConditionalOnProperty(prefix = "mic.outbox.kafka", name = "bootstrap-servers")
  static class KafkaPublisherConfiguration {

    @Bean
    @ConditionalOnMissingBean(DispatchFn.class)
    KafkaPublisher outboxPublisher(OutboxProperties properties) {
      PublisherStartupCheck.requireOneBroker(properties);
      PublisherProperties.Kafka kafka = properties.kafka();
      KafkaPublisher publisher = PublisherStartupCheck.built("mic.outbox.kafka", () -> {
        KafkaPublisher.Builder builder = KafkaPublisher.builder().bootstrapServers(kafka.bootstrapServers());
        kafka.properties().forEach(builder::property);
        return builder.build();
      });
      if (properties.startupCheck()) {
        PublisherStartupCheck.run(publisher, "mic.outbox.kafka.bootstrap-servers", "mic.outbox.kafka.topics", () -> {
          KafkaReachability.check(kafka);
          for (String topic : kafka.topics()) {
            publisher.checkDestination(topic);
          }
        });
      }
      return publisher;
    }
  }
}
