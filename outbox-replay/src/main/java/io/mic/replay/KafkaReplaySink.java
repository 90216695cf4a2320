package io.mic.replay;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Publishes a replay to a Kafka topic (the event's topic), which must exist.
 *
 * <pre>{@code
 * try (KafkaReplaySink sink = KafkaReplaySink.builder().bootstrapServers("127.0.0.1:9092").build()) {
 *   EventReplay.builder().source(source).topic("order.created").from(from).to(to).sink(sink).build().run();
 * }
 * }</pre>
 *
 * <p>The producer is idempotent with {@code acks=all}, like the live publisher's. Record key = the
 * aggregate id when the archive has it (so a replayed event lands on its aggregate's partition, after the
 * earlier ones), value = the archived JSON as UTF-8, headers = the replay headers ({@code x-replay},
 * {@code x-replay-batch-id}, {@code x-original-event-id}, aggregate headers) as UTF-8. A chunk is sent
 * whole, flushed, and its outcomes are read in replay order: the first record that failed stops the replay;
 * records after it may have been written all the same, and a resumed run sends them again (consumers
 * deduplicate on {@code x-original-event-id}).
 */
public final class KafkaReplaySink implements ReplaySink {
  public static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(30);
  /** The producer's {@code max.request.size}: no record, with its batch's overhead, may be larger. */
  public static final int MAX_REQUEST_SIZE = 1_048_576;
  /** A record batch's header in Kafka's record format 2, before its first record. */
  private static final int BATCH_OVERHEAD = 61;

  private final String bootstrapServers;
  private final Duration deliveryTimeout;
  private KafkaProducer<byte[], byte[]> producer;
  private String topic;
  /** The topic's {@code max.message.bytes}: the largest record batch the broker takes for it. */
  private long topicLimit = Long.MAX_VALUE;

  private KafkaReplaySink(Builder b) {
    this.bootstrapServers = b.bootstrapServers;
    this.deliveryTimeout = b.deliveryTimeout;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Checks that the topic exists and reads its size limit, then creates the producer. */
  @Override
  public void prepare(ReplayQuery query) throws InterruptedException {
    long timeout = Math.min(deliveryTimeout.toMillis(), 10_000);
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
        AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout,
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout))) {
      admin.describeTopics(Set.of(query.topic())).allTopicNames().get(timeout + 1_000, TimeUnit.MILLISECONDS);
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, query.topic());
      ConfigEntry limit = admin.describeConfigs(List.of(resource)).all().get(timeout + 1_000, TimeUnit.MILLISECONDS)
          .get(resource).get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG);
      topic = query.topic();
      topicLimit = limit == null || limit.value() == null ? Long.MAX_VALUE : Long.parseLong(limit.value());
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        throw new ReplayConfigurationException("bootstrapServers", "Kafka topic '" + query.topic()
            + "' does not exist at " + bootstrapServers + ": create it (with the live topic's partition count)");
      }
      throw new ReplaySinkException(0, 0, "cannot use Kafka at " + bootstrapServers + " ("
          + e.getCause() + "): check the address and that the broker runs", null);
    } catch (TimeoutException e) {
      throw new ReplaySinkException(0, 0, "Kafka at " + bootstrapServers + " did not answer within "
          + timeout + " ms: check the address and that the broker runs", null);
    } catch (KafkaException e) {
      throw new ReplayConfigurationException("bootstrapServers", "cannot use Kafka at '" + bootstrapServers
          + "': " + e.getMessage());
    }
    producer = new KafkaProducer<>(Map.of(
        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
        ProducerConfig.ACKS_CONFIG, "all",
        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true,
        ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5,
        ProducerConfig.LINGER_MS_CONFIG, 5,
        ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) deliveryTimeout.toMillis(),
        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) Math.min(deliveryTimeout.toMillis() - 5, 10_000),
        ProducerConfig.MAX_REQUEST_SIZE_CONFIG, MAX_REQUEST_SIZE,
        ProducerConfig.CLIENT_ID_CONFIG, "mic-events-replay"),
        new ByteArraySerializer(), new ByteArraySerializer());
  }

  /**
   * Refuses a record larger, in its own batch, than the topic's {@code max.message.bytes} or the producer's
   * {@code max.request.size}: Kafka would refuse it mid-replay, after the records before it were published.
   */
  @Override
  public void validate(ReplayMessage m) {
    ProducerRecord<byte[], byte[]> r = recordOf(m);
    int key = r.key() == null ? 0 : r.key().length;
    int value = r.value().length;
    long headers = 0;
    for (Header h : r.headers()) {
      int name = h.key().getBytes(StandardCharsets.UTF_8).length;
      headers += varintSize(name) + name + varintSize(h.value().length) + h.value().length;
    }
    long body = 3 // attributes, timestamp delta and offset delta of the batch's only record
        + varintSize(r.key() == null ? -1 : key) + key + varintSize(value) + value
        + varintSize(m.headers().size()) + headers;
    long size = BATCH_OVERHEAD + varintSize((int) Math.min(Integer.MAX_VALUE, body)) + body;
    boolean topicBound = topicLimit <= MAX_REQUEST_SIZE;
    long limit = topicBound ? topicLimit : MAX_REQUEST_SIZE;
    if (size > limit) {
      throw new UnpublishableEventException("event " + m.event().id() + " cannot go to Kafka: the record would be up"
          + " to " + size + " bytes (value " + value + ", key " + key + ", headers " + headers + "), over the " + limit
          + (topicBound ? " bytes of topic " + topic + "'s max.message.bytes: raise the topic's limit"
              : " bytes of the producer's max.request.size:")
          + " or leave the event out of the range");
    }
  }

  /** The bytes of {@code n} as a zig-zag varint, as Kafka's record format writes lengths. */
  private static int varintSize(int n) {
    int v = (n << 1) ^ (n >> 31);
    int bytes = 1;
    while ((v & 0xFFFFFF80) != 0) {
      bytes++;
      v >>>= 7;
    }
    return bytes;
  }

  @Override
  public void publish(List<ReplayMessage> messages) throws InterruptedException {
    if (producer == null) {
      throw new IllegalStateException("prepare() must be called before publish()");
    }
    List<Future<RecordMetadata>> sent = new ArrayList<>(messages.size());
    try {
      for (ReplayMessage m : messages) {
        sent.add(producer.send(recordOf(m)));
      }
      producer.flush();
    } catch (InterruptException e) {
      Thread.interrupted();
      throw new InterruptedException("interrupted while publishing to Kafka");
    }
    int firstFailed = -1;
    Throwable cause = null;
    int acknowledgedAfter = 0;
    for (int i = 0; i < sent.size(); i++) {
      Throwable error = outcome(sent.get(i));
      if (error != null && firstFailed < 0) {
        firstFailed = i;
        cause = error;
      } else if (error == null && firstFailed >= 0) {
        acknowledgedAfter++;
      }
    }
    if (firstFailed >= 0) {
      ReplayMessage m = messages.get(firstFailed);
      throw new ReplaySinkException(firstFailed, acknowledgedAfter, "event " + m.event().id() + " on Kafka topic '"
          + m.subject() + "': " + cause.getClass().getSimpleName() + ": " + cause.getMessage(), cause);
    }
  }

  private Throwable outcome(Future<RecordMetadata> f) throws InterruptedException {
    try {
      f.get(deliveryTimeout.toMillis() + 5_000, TimeUnit.MILLISECONDS); // the producer fails it after the delivery timeout
      return null;
    } catch (ExecutionException e) {
      return e.getCause();
    } catch (TimeoutException e) {
      return e;
    }
  }

  static ProducerRecord<byte[], byte[]> recordOf(ReplayMessage m) {
    RecordHeaders headers = new RecordHeaders();
    m.headers().forEach((name, value) -> headers.add(name, value.getBytes(StandardCharsets.UTF_8)));
    String aggregateId = m.event().aggregateId();
    byte[] key = aggregateId == null ? null : aggregateId.getBytes(StandardCharsets.UTF_8);
    return new ProducerRecord<>(m.subject(), null, key, m.payloadBytes(), headers);
  }

  @Override
  public void close() {
    if (producer != null) {
      producer.close(deliveryTimeout);
      producer = null;
    }
  }

  /** Options of a {@link KafkaReplaySink}; {@link #build()} validates them. */
  public static final class Builder {
    private String bootstrapServers;
    private Duration deliveryTimeout = DEFAULT_DELIVERY_TIMEOUT;

    private Builder() {}

    /** Required: the brokers, e.g. {@code 127.0.0.1:9092} or {@code host1:9092,host2:9092}. */
    public Builder bootstrapServers(String bootstrapServers) {
      this.bootstrapServers = bootstrapServers;
      return this;
    }

    /** How long one record may take to be acknowledged (default 30 s); then the replay stops. */
    public Builder deliveryTimeout(Duration deliveryTimeout) {
      this.deliveryTimeout = deliveryTimeout;
      return this;
    }

    /** @throws ReplayConfigurationException naming the option that is wrong */
    public KafkaReplaySink build() {
      if (bootstrapServers == null || !bootstrapServers.matches("[A-Za-z0-9_.\\[\\]:-]+:\\d{1,5}(,[A-Za-z0-9_.\\[\\]:-]+:\\d{1,5})*")) {
        throw new ReplayConfigurationException("bootstrapServers", "bootstrap servers must be host:port[,host:port…],"
            + " e.g. 127.0.0.1:9092, was " + (bootstrapServers == null ? "missing" : "'" + bootstrapServers + "'"));
      }
      if (deliveryTimeout == null || deliveryTimeout.toMillis() < 1_000 || deliveryTimeout.toMillis() > Integer.MAX_VALUE) {
        throw new ReplayConfigurationException("deliveryTimeout", "deliveryTimeout must be at least 1 s, was "
            + deliveryTimeout);
      }
      return new KafkaReplaySink(this);
    }
  }
}
