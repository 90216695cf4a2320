package io.mic.outbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.SchemaVersions;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.kafka.KafkaTestBroker;
import io.mic.outbox.rabbitmq.TestRabbit;
import io.mic.outbox.test.OutboxTestDatabase;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;
import org.springframework.boot.amqp.autoconfigure.RabbitAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The inbox behind Spring's listener containers, end to end in a real Boot context: the outbox publishes by
 * properties, a {@code @RabbitListener} / {@code @KafkaListener} consumes through the inbox on PostgreSQL, and an
 * effect that fails once is applied exactly once while the listener goes on consuming; an event of a schema
 * version the listener does not read comes back unapplied until the listener reads it, then is applied once.
 */
class ListenerContainersTest {
  private static final OutboxTestDatabase DB = OutboxTestDatabase.postgres();

  private final String name = TestRabbit.uniqueName();
  private String table;
  private ApplicationContextRunner runner;

  @BeforeEach
  void setUp() {
    table = DB.newTable();
    runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
            DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
            OutboxPublisherAutoConfiguration.class, OutboxAutoConfiguration.class))
        .withPropertyValues("spring.datasource.url=" + DB.url(), "spring.datasource.username=" + DB.user(),
            "spring.datasource.password=" + DB.password(), "spring.datasource.hikari.maximum-pool-size=6",
            "mic.outbox.table=" + table, "mic.outbox.create-schema=true", "mic.outbox.poll-interval=50ms",
            "test.name=" + name, "test.inbox=" + table + "_inbox")
        .withUserConfiguration(Billing.class);
  }

  @AfterEach
  void dropTables() {
    DB.dropStore(table);
    DB.execute("DROP TABLE IF EXISTS " + table + "_inbox");
  }

  @Test
  void aRabbitListenerAppliesAFailedEffectOnceAndGoesOnConsuming() throws Exception {
    try (com.rabbitmq.client.Connection rabbit = TestRabbit.connect(); Channel channel = rabbit.createChannel()) {
      channel.exchangeDeclare(name, BuiltinExchangeType.TOPIC);
      channel.queueDeclare(name, false, false, false, null);
      channel.queueBind(name, name, "#");
      try {
        runner.withConfiguration(AutoConfigurations.of(RabbitAutoConfiguration.class))
            .withUserConfiguration(RabbitBilling.class)
            .withPropertyValues("spring.rabbitmq.addresses=" + TestRabbit.uri(),
                "mic.outbox.rabbitmq.uri=" + TestRabbit.uri(), "mic.outbox.rabbitmq.exchange=" + name)
            .run(context -> appendTwoAndAwaitEachAppliedOnce(context.getBean(TransactionTemplate.class),
                context.getBean(TransactionalOutbox.class), context.getBean(Billing.class)));
      } finally {
        channel.queueDelete(name);
        channel.exchangeDelete(name);
      }
    }
  }

  @Test
  void aKafkaListenerAppliesAFailedEffectOnceAndGoesOnConsuming() throws Exception {
    String bootstrap = KafkaTestBroker.bootstrap();
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      admin.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all().get();
      try {
        runner.withConfiguration(AutoConfigurations.of(KafkaAutoConfiguration.class))
            .withUserConfiguration(KafkaBilling.class)
            .withPropertyValues("spring.kafka.bootstrap-servers=" + bootstrap,
                "spring.kafka.consumer.auto-offset-reset=earliest", "spring.kafka.listener.ack-mode=manual",
                "mic.outbox.kafka.bootstrap-servers=" + bootstrap, "mic.outbox.kafka.topics=" + name)
            .run(context -> appendTwoAndAwaitEachAppliedOnce(context.getBean(TransactionTemplate.class),
                context.getBean(TransactionalOutbox.class), context.getBean(Billing.class)));
      } finally {
        admin.deleteTopics(List.of(name)).all().get();
      }
    }
  }

  private void appendTwoAndAwaitEachAppliedOnce(TransactionTemplate tx, TransactionalOutbox outbox, Billing billing) {
    OutboxEvent first = event("{\"n\":1}", 1);
    OutboxEvent second = event("{\"n\":2}", 1);
    tx.executeWithoutResult(s -> outbox.append(first));
    await().atMost(Duration.ofSeconds(30)).until(() -> billing.invoices.size() == 1);
    tx.executeWithoutResult(s -> outbox.append(second));
    await().atMost(Duration.ofSeconds(30)).until(() -> billing.invoices.size() == 2);

    assertThat(billing.invoices).containsExactly(first.id().toString(), second.id().toString());
    assertThat(billing.outcomes).containsExactly(DeliveryOutcome.REDELIVERED, DeliveryOutcome.APPLIED,
        DeliveryOutcome.APPLIED);

    // a version the listener does not read yet: delivered again, not applied, until the listener reads it
    OutboxEvent newer = event("{\"n\":3,\"currency\":\"EUR\"}", 2);
    tx.executeWithoutResult(s -> outbox.append(newer));
    await().atMost(Duration.ofSeconds(30)).until(() -> billing.outcomes.size() >= 5);
    assertThat(List.copyOf(billing.outcomes).subList(3, 5)).containsOnly(DeliveryOutcome.REDELIVERED);
    assertThat(billing.invoices).hasSize(2);
    billing.accepts.set(billing.accepts.get().topic(name, 2));
    await().atMost(Duration.ofSeconds(30)).until(() -> billing.invoices.size() == 3);
    assertThat(billing.invoices).containsExactly(first.id().toString(), second.id().toString(), newer.id().toString());
    assertThat(billing.outcomes.get(billing.outcomes.size() - 1)).isEqualTo(DeliveryOutcome.APPLIED);
  }

  private OutboxEvent event(String payload, int schemaVersion) {
    return OutboxEvent.builder().aggregate("order", "42").topic(name).schemaVersion(schemaVersion).payload(payload)
        .build();
  }

  /** The consumer: an inbox on PostgreSQL and an effect that fails the first time (a database hiccup). */
  @Configuration(proxyBeanMethods = false)
  static class Billing {
    final List<String> invoices = new CopyOnWriteArrayList<>();
    final List<DeliveryOutcome> outcomes = new CopyOnWriteArrayList<>();
    final AtomicReference<SchemaVersions> accepts = new AtomicReference<>(SchemaVersions.upTo(1));
    private final AtomicInteger failuresLeft = new AtomicInteger(1);
    private JdbcInbox inbox;

    @Bean
    JdbcInbox inbox(DataSource dataSource, org.springframework.core.env.Environment env) {
      inbox = JdbcInbox.builder().dataSource(dataSource).table(env.getProperty("test.inbox")).build();
      inbox.createSchema();
      return inbox;
    }

    boolean apply(String eventId) {
      return inbox.runOnce("billing", eventId, tx -> {
        if (failuresLeft.getAndDecrement() > 0) {
          throw new SQLException("the invoice table is locked");
        }
        invoices.add(eventId);
      });
    }
  }

  static class RabbitBilling {
    private final Billing billing;

    RabbitBilling(Billing billing) {
      this.billing = billing;
    }

    @RabbitListener(queues = "${test.name}", ackMode = "MANUAL")
    void onOrder(Message message, Channel channel) throws IOException {
      billing.outcomes.add(SpringRabbitConsumers.handle(message, channel, billing.accepts.get(), billing::apply));
    }
  }

  static class KafkaBilling {
    private final Billing billing;

    KafkaBilling(Billing billing) {
      this.billing = billing;
    }

    @KafkaListener(topics = "${test.name}", groupId = "${test.name}")
    void onOrder(ConsumerRecord<String, String> record, Acknowledgment ack) {
      billing.outcomes.add(SpringKafkaConsumers.handle(record, ack, billing.accepts.get(), billing::apply));
    }
  }
}
