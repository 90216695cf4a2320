package io.mic.outbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.SchemaVersions;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@link RabbitMqConsumers} on a real queue. */
class RabbitMqConsumersTest {
  private Connection connection;
  private Channel channel;
  private String queue;

  @BeforeEach
  void declareQueue() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(TestRabbit.uri());
    connection = factory.newConnection();
    channel = connection.createChannel();
    queue = channel.queueDeclare("", false, true, false, null).getQueue(); // exclusive: goes with the connection
  }

  @AfterEach
  void close() throws Exception {
    connection.close();
  }

  /**
   * A delivery whose event id no inbox can keep (padded, here) would fail the inbox on every delivery, and a
   * classic queue delivers it again at once, ahead of the rest: the helper rejects it without requeue
   * instead of handing it to the handler, and the delivery behind it is handled.
   */
  @Test
  void aDeliveryWhoseEventIdNoInboxCanKeepIsRejectedNotRequeued() throws Exception {
    publish("e-1 ");
    publish("e-2");
    List<String> applied = new ArrayList<>();

    Delivery padded = next();
    assertThat(RabbitMqConsumers.handle(channel, padded, applied::add)).isEqualTo(DeliveryOutcome.REJECTED);
    assertThatThrownBy(() -> RabbitMqConsumers.idempotencyKey(padded))
        .isInstanceOf(OutboxException.class)
        .hasMessage("the delivery with routing key " + queue + " carries an event id no inbox can keep: its"
            + " event id 'e-1 ' must not start or end with whitespace");
    Delivery good = next();
    assertThat(RabbitMqConsumers.handle(channel, good, applied::add)).isEqualTo(DeliveryOutcome.APPLIED);

    assertThat(applied).containsExactly("e-2");
    assertThat(channel.basicGet(queue, false)).as("the rejected delivery is not back in the queue").isNull();
  }

  /**
   * A publisher other than this library may send the id as a byte array (AMQP field type 'x'): it is the
   * same key on every delivery, so a redelivery is recognised as a duplicate.
   */
  @Test
  void anEventIdSentAsBytesIsReadAsItsText() throws Exception {
    publish("e-7".getBytes(StandardCharsets.UTF_8));

    assertThat(RabbitMqConsumers.idempotencyKey(next())).isEqualTo("e-7");
  }

  /**
   * A consumer that reads version 1 gets a version-2 event: it is requeued, not applied, and the broker hands
   * it back while the version-1 event behind it is applied. Once the consumer reads version 2 (it was
   * "deployed"), the requeued event is applied once and nothing is left in the queue.
   */
  @Test
  void anEventNewerThanTheConsumerReadsIsRequeuedUntilAConsumerThatReadsItAppliesItOnce() throws Exception {
    OutboxEvent v2 = OutboxEvent.builder().aggregate("order", "2").topic(queue).schemaVersion(2).payload("{}").build();
    OutboxEvent v1 = OutboxEvent.builder().aggregate("order", "1").topic(queue).payload("{}").build();
    publish(v2);
    publish(v1);
    List<String> applied = new CopyOnWriteArrayList<>();
    List<Boolean> refusedRedeliverFlags = new CopyOnWriteArrayList<>();
    SchemaVersions before = SchemaVersions.upTo(1);
    AtomicReference<SchemaVersions> accepts = new AtomicReference<>(before);

    channel.basicQos(10);
    String tag = channel.basicConsume(queue, false, (consumerTag, delivery) -> {
      if (RabbitMqConsumers.handle(channel, delivery, accepts.get(), applied::add) == DeliveryOutcome.REDELIVERED) {
        refusedRedeliverFlags.add(delivery.getEnvelope().isRedeliver());
      }
    }, consumerTag -> { });
    await().atMost(Duration.ofSeconds(10)).until(() -> refusedRedeliverFlags.size() >= 2 && !applied.isEmpty());
    assertThat(applied).containsExactly(v1.id().toString());
    assertThat(List.copyOf(refusedRedeliverFlags).subList(0, 2)).as("requeued, not lost: handed back").containsExactly(false, true);

    accepts.set(before.topic(queue, 2));
    await().atMost(Duration.ofSeconds(10)).until(() -> applied.size() == 2);
    channel.basicCancel(tag);
    assertThat(applied).containsExactly(v1.id().toString(), v2.id().toString());
    assertThat(channel.basicGet(queue, false)).as("acked: not delivered again").isNull();
  }

  /** Publishes {@code event} with the headers every publisher of this library sends. */
  private void publish(OutboxEvent event) throws Exception {
    channel.basicPublish("", queue, new AMQP.BasicProperties.Builder()
        .headers(new HashMap<>(OutboxHeaders.of(event))).build(), "{}".getBytes(StandardCharsets.UTF_8));
  }

  /** Publishes a message whose {@code x-event-id} header is {@code eventId} (a string or bytes). */
  private void publish(Object eventId) throws Exception {
    channel.basicPublish("", queue, new AMQP.BasicProperties.Builder()
        .headers(Map.of(OutboxHeaders.EVENT_ID, eventId)).build(), "{}".getBytes(StandardCharsets.UTF_8));
  }

  private Delivery next() throws Exception {
    GetResponse r = channel.basicGet(queue, false);
    assertThat(r).isNotNull();
    return new Delivery(r.getEnvelope(), r.getProps(), r.getBody());
  }
}
