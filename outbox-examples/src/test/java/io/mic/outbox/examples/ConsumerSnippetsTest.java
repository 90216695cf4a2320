package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.kafka.KafkaTestBroker;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import io.mic.outbox.rabbitmq.TestRabbit;
import io.mic.outbox.test.OutboxTestDatabase;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The README's consumer snippets, run as written on the real brokers with the inbox on PostgreSQL: an effect
 * that fails once and then succeeds is applied exactly once, and the consumer goes on consuming.
 */
class ConsumerSnippetsTest {
  private static final OutboxTestDatabase DB = OutboxTestDatabase.postgres();
  private static final DataSource db = DB.dataSource();
  private final String name = TestRabbit.uniqueName();
  private final List<String> invoices = new CopyOnWriteArrayList<>();
  private final AtomicInteger failuresLeft = new AtomicInteger(1);
  private JdbcInbox inbox;

  @BeforeEach
  void createInbox() {
    inbox = JdbcInbox.builder().dataSource(db).table(inboxTable()).build();
    inbox.createSchema();
  }

  @AfterEach
  void dropInbox() {
    DB.execute("DROP TABLE IF EXISTS " + inboxTable());
  }

  private String inboxTable() {
    return name.replace('-', '_') + "_inbox";
  }

  /** The effect: fails while {@link #failuresLeft} lasts (a database hiccup), else records the body. */
  private void createInvoice(java.sql.Connection tx, byte[] body) throws SQLException {
    if (failuresLeft.getAndDecrement() > 0) {
      throw new SQLException("the invoice table is locked");
    }
    invoices.add(new String(body, StandardCharsets.UTF_8));
  }

  @Test
  void theRabbitMqSnippetAppliesAFailedEffectOnceAndGoesOnConsuming() throws Exception {
    try (Connection rabbit = TestRabbit.connect()) {
      Channel channel = rabbit.createChannel();
      channel.exchangeDeclare(name, BuiltinExchangeType.TOPIC);
      channel.queueDeclare(name, false, false, false, null);
      channel.queueBind(name, name, "#");
      channel.basicConsume(name, false, ReadmeExample.rabbitConsumer(inbox, channel, this::createInvoice), tag -> {});

      try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(name).build()) {
        publisher.dispatch(event("{\"n\":1}"));
        await().atMost(Duration.ofSeconds(10)).until(() -> invoices.size() == 1);
        publisher.dispatch(event("{\"n\":2}"));
      }

      await().atMost(Duration.ofSeconds(10)).until(() -> invoices.size() == 2);
      assertThat(invoices).containsExactly("{\"n\":1}", "{\"n\":2}");
      assertThat(failuresLeft).as("the first attempt failed").hasNegativeValue();
      assertThat(channel.isOpen()).as("the failed effect left the channel consuming").isTrue();
      assertThat(channel.messageCount(name)).isZero();
    } finally {
      try (Connection rabbit = TestRabbit.connect(); Channel c = rabbit.createChannel()) {
        c.queueDelete(name);
        c.exchangeDelete(name);
      }
    }
  }

  @Test
  void theKafkaSnippetAppliesAFailedEffectOnceAndGoesOnConsuming() throws Exception {
    String bootstrap = KafkaTestBroker.bootstrap();
    String topic = name + ".created";
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
    }
    Map<String, Object> config = Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ConsumerConfig.GROUP_ID_CONFIG, name, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrap).build();
        KafkaConsumer<byte[], byte[]> kafka =
            new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
      kafka.subscribe(List.of(topic));
      publisher.dispatch(event(topic, "{\"n\":1}"));
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        ReadmeExample.kafkaConsumer(inbox, kafka, this::createInvoice);
        return invoices.size() == 1;
      });
      publisher.dispatch(event(topic, "{\"n\":2}"));
      await().atMost(Duration.ofSeconds(30)).until(() -> {
        ReadmeExample.kafkaConsumer(inbox, kafka, this::createInvoice);
        return invoices.size() == 2;
      });

      assertThat(invoices).containsExactly("{\"n\":1}", "{\"n\":2}");
      assertThat(failuresLeft).as("the first attempt failed").hasNegativeValue();
      assertThat(kafka.committed(Set.of(new TopicPartition(topic, 0))).get(new TopicPartition(topic, 0)).offset())
          .as("committed past both records").isEqualTo(2);
    } finally {
      try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
        admin.deleteTopics(List.of(topic)).all().get();
      }
    }
  }

  private static OutboxEvent event(String payload) {
    return event("order.created", payload);
  }

  private static OutboxEvent event(String topic, String payload) {
    return OutboxEvent.builder().aggregate("order", "42").topic(topic).payload(payload).build();
  }
}
