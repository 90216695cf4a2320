package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.BuiltinExchangeType;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.rabbitmq.RabbitMqConsumers;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import io.mic.outbox.rabbitmq.TestRabbit;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link RabbitMqConsumers} on a real RabbitMQ with the inbox on a real PostgreSQL ({@code MIC_TEST_POSTGRES_URL},
 * else the local server): a redelivered message has its effect once, a failed effect is requeued, a delivery
 * without an event id is rejected without requeue.
 */
class RabbitMqConsumerInboxTest {
  private final String name = TestRabbit.uniqueName();
  private final AtomicInteger invoices = new AtomicInteger();
  private HikariDataSource db;
  private JdbcInbox inbox;
  private Connection rabbit;
  private Channel channel;

  @BeforeEach
  void connect() throws Exception {
    rabbit = TestRabbit.connect();
    channel = rabbit.createChannel();
    channel.exchangeDeclare(name, BuiltinExchangeType.TOPIC, false, true, null);
    channel.queueDeclare(name, false, false, false, null);
    channel.queueBind(name, name, "#");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(System.getenv().getOrDefault("MIC_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
    config.setUsername(System.getenv().getOrDefault("MIC_TEST_POSTGRES_USER", "postgres"));
    config.setPassword(System.getenv().getOrDefault("MIC_TEST_POSTGRES_PASSWORD", ""));
    config.setMaximumPoolSize(2);
    db = new HikariDataSource(config);
    inbox = JdbcInbox.builder().dataSource(db).table(table()).build();
    inbox.createSchema();
  }

  @AfterEach
  void close() throws Exception {
    if (rabbit != null) {
      try (Channel c = rabbit.createChannel()) {
        c.queueDelete(name);
        c.exchangeDelete(name);
      }
      rabbit.close();
    }
    if (db != null) {
      try (java.sql.Connection c = db.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + table());
        s.execute("DROP TABLE IF EXISTS " + table() + "_sequences");
      }
      db.close();
    }
  }

  @Test
  void aRedeliveredMessageIsAppliedOnceAndAFailedOneIsRequeued() throws Exception {
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(name).build()) {
      publisher.dispatch(OutboxEvent.builder().aggregate("order", "42").topic("order.created").payload("{}").build());
    }
    Delivery first = next(channel);
    assertThat(RabbitMqConsumers.handle(channel, first, id -> { throw new IllegalStateException("db hiccup"); }))
        .isEqualTo(DeliveryOutcome.REDELIVERED);

    // requeued; this time the effect commits but the consumer dies before its ack (the channel closes)
    Channel dying = rabbit.createChannel();
    Delivery second = next(dying);
    assertThat(second.getEnvelope().isRedeliver()).isTrue();
    assertThat(inbox.runOnce("billing", RabbitMqConsumers.idempotencyKey(second), tx -> invoices.incrementAndGet())).isTrue();
    dying.close();

    Delivery third = next(channel);
    assertThat(RabbitMqConsumers.handle(channel, third, id -> inbox.runOnce("billing", id, tx -> invoices.incrementAndGet())))
        .isEqualTo(DeliveryOutcome.DUPLICATE);
    assertThat(invoices).hasValue(1);
    assertThat(channel.messageCount(name)).isZero();
    assertThat(channel.basicGet(name, false)).isNull(); // acked: gone
  }

  @Test
  void aDeliveryWithoutAnEventIdIsRejectedWithoutRequeue() throws Exception {
    channel.basicPublish(name, "foreign", new AMQP.BasicProperties.Builder().headers(Map.of("tenant", "a")).build(),
        new byte[] {'{', '}'});
    Delivery foreign = next(channel);
    assertThat(RabbitMqConsumers.handle(channel, foreign, id -> invoices.incrementAndGet() > 0))
        .isEqualTo(DeliveryOutcome.REJECTED);
    assertThatThrownBy(() -> RabbitMqConsumers.idempotencyKey(foreign))
        .isInstanceOf(OutboxException.class)
        .hasMessage("the delivery with routing key foreign carries no event id: expected header x-event-id (live)"
            + " or x-original-event-id (replay); headers present: [tenant]");
    assertThat(invoices).hasValue(0);
    assertThat(channel.basicGet(name, false)).isNull();
  }

  private Delivery next(Channel from) {
    GetResponse got = await().atMost(Duration.ofSeconds(5)).until(() -> from.basicGet(name, false), r -> r != null);
    return new Delivery(got.getEnvelope(), got.getProps(), got.getBody());
  }

  private String table() {
    return name.replace('-', '_') + "_inbox";
  }
}
