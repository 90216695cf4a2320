package io.mic.outbox.examples;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.kafka.KafkaHeaders;
import io.mic.outbox.kafka.KafkaPublisher;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The demo on Apache Kafka: one topic of its own ({@code mic-demo-<run>}, 2 partitions, deleted at the end),
 * the library's {@link KafkaPublisher}, and one consumer thread reading it from the beginning.
 *
 * <p>Kafka keeps order within a partition only, so all the demo's events go to one Kafka topic, keyed by
 * order id: an order's {@code order.placed} and {@code order.paid} share a partition and arrive in order.
 * The event's own topic travels in a header. {@link #redeliverOnce} seeks back to a processed record, so
 * Kafka really delivers it again.
 */
final class KafkaBus implements Bus {
  static final String TOPIC_HEADER = "mic-demo-topic";

  private final String topic = "mic-demo-" + UUID.randomUUID().toString().substring(0, 8);
  private final Admin admin;
  private final KafkaPublisher publisher;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final Map<String, List<Consumer<Message>>> subscribers = new ConcurrentHashMap<>();
  private final AtomicReference<Predicate<Message>> redeliver = new AtomicReference<>();
  private final Thread poller;
  private volatile boolean running = true;

  KafkaBus(String bootstrap) {
    admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000));
    try {
      admin.createTopics(List.of(new NewTopic(topic, 2, (short) 1))).all().get(15, TimeUnit.SECONDS);
    } catch (Exception e) {
      admin.close(Duration.ZERO);
      throw new OutboxDemo.DemoSetupException("cannot use Kafka at " + bootstrap + ": " + e
          + " (start a broker, or leave out --kafka)");
    }
    publisher = KafkaPublisher.builder().bootstrapServers(bootstrap).topicOf(e -> topic).build();
    consumer = new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName()));
    List<TopicPartition> partitions = List.of(new TopicPartition(topic, 0), new TopicPartition(topic, 1));
    consumer.assign(partitions);
    consumer.seekToBeginning(partitions);
    poller = new Thread(this::poll, "mic-demo-kafka-consumer");
    poller.setDaemon(true);
    poller.start();
  }

  @Override
  public String describe() {
    return "Apache Kafka (topic " + topic + ")";
  }

  @Override
  public DispatchFn publisher() {
    return event -> publisher.dispatch(event.toStored().headers(java.util.Map.of(TOPIC_HEADER, event.topic())).build());
  }

  @Override
  public void subscribe(String eventTopic, Consumer<Message> subscriber) {
    subscribers.computeIfAbsent(eventTopic, t -> new CopyOnWriteArrayList<>()).add(subscriber);
  }

  @Override
  public void redeliverOnce(Predicate<Message> which) {
    redeliver.set(which);
  }

  /** The consumer thread: the only one that touches the consumer. */
  private void poll() {
    try {
      while (running) {
        ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(100));
        for (TopicPartition partition : records.partitions()) {
          for (ConsumerRecord<byte[], byte[]> r : records.records(partition)) {
            if (deliver(r)) {
              break; // the rest of this partition comes again after the seek
            }
          }
        }
      }
    } catch (WakeupException e) {
      // close() woke the consumer up: stop
    }
  }

  /** Returns true when the record is to be read again: the consumer seeked back to it. */
  private boolean deliver(ConsumerRecord<byte[], byte[]> r) {
    Map<String, String> headers = KafkaHeaders.toMap(r.headers());
    String eventTopic = headers.get(TOPIC_HEADER);
    Message message = new Message(eventTopic, headers, new String(r.value(), StandardCharsets.UTF_8));
    subscribers.getOrDefault(eventTopic, List.of()).forEach(s -> s.accept(message));
    Predicate<Message> which = redeliver.get();
    if (which != null && which.test(message) && redeliver.compareAndSet(which, null)) {
      // as if the consumer died before committing its offset: the record is read again
      consumer.seek(new TopicPartition(r.topic(), r.partition()), r.offset());
      return true;
    }
    return false;
  }

  @Override
  public void close() {
    running = false;
    consumer.wakeup();
    try {
      poller.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    consumer.close(Duration.ofSeconds(2));
    publisher.close();
    try {
      admin.deleteTopics(Set.of(topic)).all().get(10, TimeUnit.SECONDS);
    } catch (Exception e) {
      // the demo's topic stays behind; its name says where it comes from
    }
    admin.close(Duration.ofSeconds(2));
  }
}
