package io.mic.outbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.Delivery;
import com.rabbitmq.client.GetResponse;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@link RabbitMqConsumers} on a real queue. */
class RabbitMqConsumersTest {

  /**
   * A delivery whose event id no inbox can keep (padded, here) would fail the inbox on every delivery, and a
   * classic queue delivers it again at once, ahead of the rest: the helper rejects it without requeue
   * instead of handing it to the handler, and the delivery behind it is handled.
   */
  @Test
  void aDeliveryWhoseEventIdNoInboxCanKeepIsRejectedNotRequeued() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(TestRabbit.uri());
    try (Connection connection = factory.newConnection(); Channel channel = connection.createChannel()) {
      String queue = channel.queueDeclare("", false, true, true, null).getQueue();
      publish(channel, queue, "e-1 ");
      publish(channel, queue, "e-2");
      List<String> applied = new ArrayList<>();

      Delivery padded = next(channel, queue);
      assertThatThrownBy(() -> RabbitMqConsumers.handle(channel, padded, applied::add))
          .isInstanceOf(OutboxException.class)
          .hasMessage("the delivery with routing key " + queue + " carries an event id no inbox can keep: its"
              + " event id 'e-1 ' must not start or end with whitespace");
      Delivery good = next(channel, queue);
      assertThat(RabbitMqConsumers.handle(channel, good, applied::add)).isTrue();

      assertThat(applied).containsExactly("e-2");
      assertThat(channel.basicGet(queue, false)).as("the rejected delivery is not back in the queue").isNull();
    }
  }

  /**
   * A publisher other than this library may send the id as a byte array (AMQP field type 'x'): it is the
   * same key on every delivery, so a redelivery is recognised as a duplicate.
   */
  @Test
  void anEventIdSentAsBytesIsReadAsItsText() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(TestRabbit.uri());
    try (Connection connection = factory.newConnection(); Channel channel = connection.createChannel()) {
      String queue = channel.queueDeclare("", false, true, true, null).getQueue();
      channel.basicPublish("", queue, new AMQP.BasicProperties.Builder()
          .headers(Map.of(OutboxHeaders.EVENT_ID, "e-7".getBytes(StandardCharsets.UTF_8))).build(),
          "{}".getBytes(StandardCharsets.UTF_8));

      assertThat(RabbitMqConsumers.idempotencyKey(next(channel, queue))).isEqualTo("e-7");
    }
  }

  private static void publish(Channel channel, String queue, String eventId) throws Exception {
    channel.basicPublish("", queue, new AMQP.BasicProperties.Builder()
        .headers(Map.of(OutboxHeaders.EVENT_ID, eventId)).build(), "{}".getBytes(StandardCharsets.UTF_8));
  }

  private static Delivery next(Channel channel, String queue) throws Exception {
    GetResponse r = channel.basicGet(queue, false);
    assertThat(r).isNotNull();
    return new Delivery(r.getEnvelope(), r.getProps(), r.getBody());
  }
}
