package io.mic.outbox.examples;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.DefaultConsumer;
import com.rabbitmq.client.Envelope;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The demo on RabbitMQ: a topic exchange and a queue of its own ({@code mic-demo-<run>}, bound for every
 * routing key, both deleted at the end), the library's {@link RabbitMqPublisher} (publisher confirms,
 * routing key = topic), and one consumer with manual acknowledgements and a prefetch of 1, so it sees
 * messages in queue order. {@link #redeliverOnce} makes it reject one message with requeue after processing
 * it, so RabbitMQ really delivers it again.
 */
final class RabbitMqBus implements Bus {
  private final String name = "mic-demo-" + UUID.randomUUID().toString().substring(0, 8);
  private final Connection connection;
  private final Channel channel;
  private final RabbitMqPublisher publisher;
  private final Map<String, List<Consumer<Message>>> subscribers = new ConcurrentHashMap<>();
  private final AtomicReference<Predicate<Message>> redeliver = new AtomicReference<>();

  RabbitMqBus(String uri) {
    try {
      // first: its URI check refuses what the client would read as localhost as guest (e.g. a bad port)
      publisher = RabbitMqPublisher.builder().uri(uri).exchange(name).connectionName("mic-outbox-demo").build();
    } catch (InvalidConfigurationException e) {
      throw new OutboxDemo.DemoSetupException("--rabbitmq: " + e.getMessage());
    }
    Connection opened = null;
    try {
      ConnectionFactory factory = new ConnectionFactory();
      factory.setUri(uri);
      factory.setConnectionTimeout(3_000);
      opened = factory.newConnection("mic-outbox-demo-consumer");
      connection = opened;
      channel = connection.createChannel();
      channel.exchangeDeclare(name, "topic", false);
      channel.queueDeclare(name, false, false, false, null);
      channel.queueBind(name, name, "#");
      channel.basicQos(1);
      channel.basicConsume(name, false, new DefaultConsumer(channel) {
        @Override
        public void handleDelivery(String tag, Envelope envelope, AMQP.BasicProperties properties, byte[] body)
            throws IOException {
          deliver(envelope, properties, body);
        }
      });
    } catch (Exception e) {
      publisher.close();
      if (opened != null) {
        opened.abort(); // what it declared is non-durable and not exclusive: it stays until a broker restart
      }
      // the client's messages may quote the URI, and with it the password
      throw new OutboxDemo.DemoSetupException("cannot use RabbitMQ at " + Secrets.redact(uri) + " ("
          + new Secrets(uri).mask(String.valueOf(e.getMessage())) + "): start rabbitmq-server, or leave out --rabbitmq");
    }
  }

  @Override
  public String describe() {
    return "RabbitMQ (exchange and queue " + name + ")";
  }

  @Override
  public DispatchFn publisher() {
    return publisher;
  }

  @Override
  public void subscribe(String topic, Consumer<Message> subscriber) {
    subscribers.computeIfAbsent(topic, t -> new CopyOnWriteArrayList<>()).add(subscriber);
  }

  @Override
  public void redeliverOnce(Predicate<Message> which) {
    redeliver.set(which);
  }

  /** On the client's consumer thread, one message at a time. */
  private void deliver(Envelope envelope, AMQP.BasicProperties properties, byte[] body) throws IOException {
    Map<String, String> headers = new LinkedHashMap<>();
    if (properties.getHeaders() != null) {
      properties.getHeaders().forEach((key, value) -> headers.put(key, String.valueOf(value)));
    }
    String topic = envelope.getRoutingKey();
    Message message = new Message(topic, Map.copyOf(headers), new String(body, StandardCharsets.UTF_8));
    subscribers.getOrDefault(topic, List.of()).forEach(s -> s.accept(message));
    Predicate<Message> which = redeliver.get();
    if (which != null && which.test(message) && redeliver.compareAndSet(which, null)) {
      // as if the consumer died before acknowledging: RabbitMQ puts the message back and delivers it again
      channel.basicReject(envelope.getDeliveryTag(), true);
    } else {
      channel.basicAck(envelope.getDeliveryTag(), false);
    }
  }

  @Override
  public void close() {
    publisher.close();
    try {
      channel.queueDelete(name);
      channel.exchangeDelete(name);
      connection.close();
    } catch (IOException | RuntimeException e) {
      connection.abort(); // the exchange and queue stay behind, non-durable: a broker restart removes them
    }
  }
}
