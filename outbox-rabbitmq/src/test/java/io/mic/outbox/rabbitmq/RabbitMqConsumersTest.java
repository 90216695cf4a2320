package io.mic.outbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
    queue = channel.queueDeclare("", false, true, true, null).getQueue(); // goes with the connection
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
