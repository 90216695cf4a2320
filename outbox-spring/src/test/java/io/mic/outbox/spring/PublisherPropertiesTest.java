package io.mic.outbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.kafka.KafkaTestBroker;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import io.mic.outbox.rabbitmq.TestRabbit;
import io.mic.outbox.test.OutboxTestDatabase;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The publisher built from {@code mic.outbox.*} properties, in a real Boot context on PostgreSQL and the real
 * brokers, and the start-up check that fails naming the property.
 */
class PublisherPropertiesTest {
  private static final OutboxTestDatabase DB = OutboxTestDatabase.postgres();
  private static final String NATS_URL = System.getenv().getOrDefault("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");

  private final String name = TestRabbit.uniqueName();
  private String table;
  private ApplicationContextRunner runner;

  @BeforeEach
  void setUp() {
    table = DB.newTable();
    runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
            DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
            OutboxPublisherAutoConfiguration.class, OutboxAutoConfiguration.class, OutboxDataSourceCheck.class))
        .withPropertyValues("spring.datasource.url=" + DB.url(), "spring.datasource.username=" + DB.user(),
            "spring.datasource.password=" + DB.password(), "spring.datasource.hikari.maximum-pool-size=4",
            "mic.outbox.table=" + table, "mic.outbox.create-schema=true", "mic.outbox.poll-interval=50ms");
  }

  @AfterEach
  void dropTable() {
    DB.dropStore(table);
  }

  @Test
  void rabbitMqPropertiesBuildThePublisherAndTheEventArrives() throws Exception {
    try (Connection rabbit = TestRabbit.connect(); Channel channel = rabbit.createChannel()) {
      channel.exchangeDeclare(name, BuiltinExchangeType.TOPIC);
      channel.queueDeclare(name, false, false, false, null);
      channel.queueBind(name, name, "#");
      try {
        runner.withPropertyValues("mic.outbox.rabbitmq.uri=" + TestRabbit.uri(), "mic.outbox.rabbitmq.exchange=" + name)
            .run(context -> {
              assertThat(context).hasSingleBean(RabbitMqPublisher.class);
              OutboxEvent event = appendOne(context.getBean(TransactionTemplate.class),
                  context.getBean(TransactionalOutbox.class));

              GetResponse got = await().atMost(Duration.ofSeconds(10))
                  .until(() -> channel.basicGet(name, true), r -> r != null);
              assertThat(got.getProps().getMessageId()).isEqualTo(event.id().toString());
              await().atMost(Duration.ofSeconds(10)).until(() -> context.getBean(JdbcOutboxStore.class)
                  .find(event.id()).map(e -> e.status() == OutboxStatus.DISPATCHED).orElse(false));
            });
      } finally {
        channel.queueDelete(name);
        channel.exchangeDelete(name);
      }
    }
  }

  @Test
  void rabbitMqAddressesReachTheBrokerPastANodeThatRefuses() throws Exception {
    int closed;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closed = s.getLocalPort();
    }
    URI broker = URI.create(TestRabbit.uri());
    try (Connection rabbit = TestRabbit.connect(); Channel channel = rabbit.createChannel()) {
      channel.exchangeDeclare(name, BuiltinExchangeType.TOPIC);
      channel.queueDeclare(name, false, false, false, null);
      channel.queueBind(name, name, "#");
      try {
        // the uri's own host is the closed port: only the list reaches the broker, and the start-up check passes
        runner.withPropertyValues("mic.outbox.rabbitmq.uri=" + broker.getScheme() + "://" + broker.getRawUserInfo()
                + "@127.0.0.1:" + closed, "mic.outbox.rabbitmq.addresses=127.0.0.1:" + closed + ","
                + broker.getHost() + ":" + broker.getPort(), "mic.outbox.rabbitmq.exchange=" + name)
            .run(context -> {
              assertThat(context).hasNotFailed().hasSingleBean(RabbitMqPublisher.class);
              OutboxEvent event = appendOne(context.getBean(TransactionTemplate.class),
                  context.getBean(TransactionalOutbox.class));

              GetResponse got = await().atMost(Duration.ofSeconds(10))
                  .until(() -> channel.basicGet(name, true), r -> r != null);
              assertThat(got.getProps().getMessageId()).isEqualTo(event.id().toString());
              await().atMost(Duration.ofSeconds(10)).until(() -> context.getBean(JdbcOutboxStore.class)
                  .find(event.id()).map(e -> e.status() == OutboxStatus.DISPATCHED).orElse(false));
            });
      } finally {
        channel.queueDelete(name);
        channel.exchangeDelete(name);
      }
    }
  }

  @Test
  void rabbitMqAddressesThatCannotBeUsedFailTheStartNamingThePropertyWithoutThePassword() {
    runner.withPropertyValues("mic.outbox.rabbitmq.uri=amqp://app:s3cret@127.0.0.1:1",
            "mic.outbox.rabbitmq.addresses=127.0.0.1:1,127.0.0.1:2", "mic.outbox.rabbitmq.exchange=x")
        .run(context -> assertThat(messages(context.getStartupFailure()))
            .contains("check mic.outbox.rabbitmq.addresses: the broker cannot be used: cannot connect to RabbitMQ at"
                + " amqp://127.0.0.1:1,127.0.0.1:2/%2F")
            .doesNotContain("s3cret"));
    runner.withPropertyValues("mic.outbox.rabbitmq.uri=amqp://app:s3cret@127.0.0.1:1",
            "mic.outbox.rabbitmq.addresses=127.0.0.1:1,,127.0.0.1:2", "mic.outbox.rabbitmq.exchange=x")
        .run(context -> assertThat(messages(context.getStartupFailure()))
            .contains("invalid mic.outbox configuration: mic.outbox.rabbitmq.*: addresses entry 2 of"
                + " '127.0.0.1:1,,127.0.0.1:2' is empty")
            .doesNotContain("s3cret"));
    runner.withPropertyValues("mic.outbox.rabbitmq.addresses=127.0.0.1:1", "mic.outbox.rabbitmq.exchange=x")
        .run(context -> assertThat(messages(context.getStartupFailure()))
            .contains("invalid mic.outbox configuration: mic.outbox.rabbitmq.addresses is set without"
                + " mic.outbox.rabbitmq.uri, which gives the credentials and virtual host: set e.g."
                + " mic.outbox.rabbitmq.uri=amqp://user:secret@rabbit1:5672/vhost"));
  }

  @Test
  void aMissingExchangeFailsTheStartNamingTheProperty() {
    runner.withPropertyValues("mic.outbox.rabbitmq.uri=" + TestRabbit.uri(), "mic.outbox.rabbitmq.exchange=" + name)
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageContaining(name)
            .satisfies(e -> assertThat(messages(context.getStartupFailure()))
                .contains("check mic.outbox.rabbitmq.exchange")));
  }

  @Test
  void anUnreachableBrokerFailsTheStartNamingThePropertyWithoutItsPassword() {
    runner.withPropertyValues("mic.outbox.rabbitmq.uri=amqp://app:s3cret@127.0.0.1:1", "mic.outbox.rabbitmq.exchange=x")
        .run(context -> assertThat(messages(context.getStartupFailure()))
            .contains("check mic.outbox.rabbitmq.uri: the broker cannot be used")
            .contains("mic.outbox.startup-check=false")
            .doesNotContain("s3cret"));
  }

  @Test
  void withoutTheStartupCheckTheApplicationStartsWhileTheBrokerIsDown() {
    runner.withPropertyValues("mic.outbox.rabbitmq.uri=amqp://127.0.0.1:1", "mic.outbox.rabbitmq.exchange=x",
        "mic.outbox.startup-check=false").run(context -> assertThat(context).hasNotFailed()
            .hasSingleBean(RabbitMqPublisher.class));
  }

  @Test
  void theApplicationsOwnDispatchFnWins() {
    runner.withUserConfiguration(OwnPublisher.class)
        .withPropertyValues("mic.outbox.rabbitmq.uri=amqp://127.0.0.1:1", "mic.outbox.rabbitmq.exchange=x")
        .run(context -> {
          assertThat(context).hasNotFailed().doesNotHaveBean(RabbitMqPublisher.class);
          assertThat(context.getBean(DispatchFn.class)).isSameAs(OwnPublisher.PUBLISHER);
        });
  }

  @Test
  void twoBrokersFailTheStart() {
    runner.withPropertyValues("mic.outbox.rabbitmq.uri=amqp://127.0.0.1:1", "mic.outbox.rabbitmq.exchange=x",
        "mic.outbox.nats.url=nats://127.0.0.1:1").run(context -> assertThat(messages(context.getStartupFailure()))
            .contains("mic.outbox.nats.url and mic.outbox.rabbitmq.uri are both set"));
  }

  @Test
  void aNatsTopicNoStreamCapturesFailsTheStartAndOneThatIsCapturedPublishes() throws Exception {
    String subject = name.replace('-', '_');
    runner.withPropertyValues("mic.outbox.nats.url=" + NATS_URL, "mic.outbox.nats.topics=" + subject + ".>")
        .run(context -> assertThat(messages(context.getStartupFailure()))
            .contains("check mic.outbox.nats.topics").contains("no JetStream stream captures subject '" + subject));

    try (io.nats.client.Connection nats = Nats.connect(NATS_URL)) {
      JetStreamManagement jsm = nats.jetStreamManagement();
      jsm.addStream(StreamConfiguration.builder().name(subject).subjects(subject + ".>")
          .storageType(StorageType.Memory).build());
      try {
        runner.withPropertyValues("mic.outbox.nats.url=" + NATS_URL, "mic.outbox.nats.topics=" + subject + ".>")
            .run(context -> {
              assertThat(context).hasSingleBean(NatsJetStreamPublisher.class);
              OutboxEvent event = OutboxEvent.builder().aggregate("order", "1").topic(subject + ".created")
                  .payload("{}").build();
              context.getBean(TransactionTemplate.class)
                  .executeWithoutResult(s -> context.getBean(TransactionalOutbox.class).append(event));
              await().atMost(Duration.ofSeconds(10)).until(() -> jsm.getStreamInfo(subject).getStreamState()
                  .getMsgCount() == 1);
            });
      } finally {
        jsm.deleteStream(subject);
      }
    }
  }

  @Test
  void kafkaPropertiesBuildThePublisherWithItsProducerSettingsAndAnUnreachableClusterFails() {
    runner.withPropertyValues("mic.outbox.kafka.bootstrap-servers=" + KafkaTestBroker.bootstrap(),
        "mic.outbox.kafka.properties.linger.ms=5", "mic.outbox.kafka.properties.client.id=" + name)
        .run(context -> assertThat(context).hasNotFailed().hasSingleBean(KafkaPublisher.class));

    runner.withPropertyValues("mic.outbox.kafka.bootstrap-servers=127.0.0.1:1")
        .run(context -> assertThat(messages(context.getStartupFailure()))
            .contains("check mic.outbox.kafka.bootstrap-servers: the broker cannot be used"));
  }

  /** The broker modules, OpenTelemetry and Jackson are optional: without them the rest still starts. */
  @Test
  void withoutTheOptionalModulesThePropertiesBuildNothingAndTheOutboxStillStarts() {
    runner.withClassLoader(new FilteredClassLoader(NatsJetStreamPublisher.class, RabbitMqPublisher.class,
            KafkaPublisher.class, io.mic.outbox.opentelemetry.OutboxTracing.class, tools.jackson.databind.ObjectMapper.class))
        .withUserConfiguration(OwnPublisher.class)
        .withPropertyValues("mic.outbox.rabbitmq.uri=amqp://127.0.0.1:1", "mic.outbox.rabbitmq.exchange=x")
        .run(context -> {
          assertThat(context).hasNotFailed().hasSingleBean(TransactionalOutbox.class)
              .doesNotHaveBean(OutboxPayloadSerializer.class);
          assertThat(context.getBean(DispatchFn.class)).isSameAs(OwnPublisher.PUBLISHER);
          assertThat(messages(org.assertj.core.api.Assertions.catchThrowable(() -> context.getBean(
              TransactionalOutbox.class).event("order", "1", "order.created", Map.of("a", 1)))))
              .contains(TransactionalOutbox.NO_SERIALIZER);
        });
  }

  @Test
  void aPublisherWithoutASingleDataSourceFailsTheStartSayingWhy() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(OutboxPublisherAutoConfiguration.class,
            OutboxAutoConfiguration.class, OutboxDataSourceCheck.class))
        .withUserConfiguration(OwnPublisher.class)
        .run(context -> assertThat(messages(context.getStartupFailure()))
            .contains("the outbox needs one DataSource").contains("there is no DataSource bean"));
  }

  private static OutboxEvent appendOne(TransactionTemplate tx, TransactionalOutbox outbox) {
    OutboxEvent event = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
    tx.executeWithoutResult(status -> outbox.append(event));
    return event;
  }

  /** Every message of the failure's cause chain, where Spring wraps the one that names the property. */
  static String messages(Throwable failure) {
    StringBuilder all = new StringBuilder();
    for (Throwable t = failure; t != null; t = t.getCause()) {
      all.append(t.getMessage()).append('\n');
    }
    return all.toString();
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnPublisher {
    static final DispatchFn PUBLISHER = event -> {};

    @Bean
    DispatchFn publisher() {
      return PUBLISHER;
    }
  }
}
