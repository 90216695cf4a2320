package io.mic.outbox.examples;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.DeliverCallback;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.kafka.KafkaConsumers;
import io.mic.outbox.nats.NatsConsumers;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqConsumers;
import io.nats.client.Message;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.KafkaConsumer;

/**
 * The usage example of README.md, kept here so that it compiles against the real API. Keep the two in
 * step: the lines between the markers are the README's.
 */
final class ReadmeExample {
  private ReadmeExample() {}

  record Order(String id, String json) {
    String toJson() {
      return json;
    }
  }

  interface Orders {
    void insert(Connection c, Order order) throws SQLException;
  }

  static AsyncOutboxDispatcher example(DataSource hikari, DataSource consumerDb, Orders orders, Order order,
      Message msg) throws SQLException {
    // README begin
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(hikari).build();  // PostgreSQL, MariaDB, H2
    store.createSchema();                                 // or ship the DDL from io/mic/outbox/jdbc/schema/

    try (Connection c = hikari.getConnection()) {         // 1. your transaction writes the event
      c.setAutoCommit(false);
      orders.insert(c, order);                            //    the business change
      store.append(c, OutboxEvent.builder().aggregate("order", order.id())
          .topic("order.created").payload(order.toJson()).build());
      c.commit();                                         //    both or neither
    }

    NatsJetStreamPublisher nats = NatsJetStreamPublisher.builder().url("nats://127.0.0.1:4222").build();
    AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder()   // 2. a dispatcher publishes it
        .store(store).dispatchFn(nats)                    //    marked only after JetStream's PubAck
        .useClaim(true).preserveAggregateOrder(true).workers(4).build();
    dispatcher.start();                                   //    dispatcher.close() on shutdown

    JdbcInbox inbox = JdbcInbox.builder().dataSource(consumerDb).build();  // 3. the consumer stays idempotent
    NatsConsumers.handle(msg, eventId ->                  //    acked once applied or a duplicate, else nak-ed
        inbox.runOnce("billing", eventId, tx -> createInvoice(tx, msg)));
    // README end
    return dispatcher;
  }

  /** The consumer's business effect, written with the inbox's transaction. */
  interface Invoices {
    void create(Connection tx, byte[] body) throws SQLException;
  }

  static DeliverCallback rabbitConsumer(JdbcInbox inbox, Channel channel, Invoices invoices) {
    // README consumers begin
    DeliverCallback rabbit = (tag, delivery) -> RabbitMqConsumers.handle(channel, delivery,  // RabbitMQ
        eventId -> inbox.runOnce("billing", eventId, tx -> invoices.create(tx, delivery.getBody())));
    // README consumers end
    return rabbit;
  }

  static void kafkaConsumer(JdbcInbox inbox, KafkaConsumer<byte[], byte[]> kafka, Invoices invoices) {
    // README kafka begin
    KafkaConsumers.handle(kafka, kafka.poll(Duration.ofMillis(500)), (record, eventId) ->  // Kafka
        inbox.runOnce("billing", eventId, tx -> invoices.create(tx, record.value())));
    // README kafka end
  }

  private static void createInvoice(Connection tx, Message msg) {
    // the consumer's business effect, written with tx
  }

}
