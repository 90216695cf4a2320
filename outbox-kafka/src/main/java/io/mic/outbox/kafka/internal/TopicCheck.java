package io.mic.outbox.kafka.internal;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.Header;

/**
 * What a publisher checks before it sends (a replay, before its first publication): that a topic exists, asked
 * with the publisher's own settings (its security included), and that a record fits the producer's
 * {@code max.request.size} and the topic's {@code max.message.bytes}.
 */
public final class TopicCheck {
  /** Kafka's default {@code max.request.size}. */
  public static final int DEFAULT_MAX_REQUEST_SIZE = 1_048_576;
  /** A record batch's header in Kafka's record format 2, before its first record. */
  private static final int BATCH_OVERHEAD = 61;

  /** The producer's settings; null for the application's producer, whose settings are unknown. */
  private final Properties settings;
  private final long maxRequestSize;
  /** Each checked topic's {@code max.message.bytes}: the largest record batch the broker takes for it. */
  private final Map<String, Long> topicLimits = new ConcurrentHashMap<>();

  private TopicCheck(Properties settings, long maxRequestSize) {
    this.settings = settings;
    this.maxRequestSize = maxRequestSize;
  }

  /** Checks with the publisher's own producer settings. */
  public static TopicCheck with(Properties settings) {
    String max = settings.getProperty(ProducerConfig.MAX_REQUEST_SIZE_CONFIG);
    return new TopicCheck(settings, max == null ? DEFAULT_MAX_REQUEST_SIZE : Long.parseLong(max.trim()));
  }

  /** For the application's producer: nothing to ask with, no limit known. */
  public static TopicCheck none() {
    return new TopicCheck(null, Long.MAX_VALUE);
  }

  /** Checks that {@code topic} exists and learns its {@code max.message.bytes}. */
  public void checkTopic(String topic) throws InterruptedException {
    if (settings == null) {
      return;
    }
    String bootstrap = settings.getProperty(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG);
    long timeout = Math.min(Long.parseLong(settings.getProperty(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG)), 10_000);
    Properties admin = new Properties();
    admin.putAll(settings); // the connection and security settings apply to the admin client alike
    admin.keySet().retainAll(AdminClientConfig.configNames());
    admin.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) timeout);
    admin.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) timeout);
    try (Admin client = Admin.create(admin)) {
      client.describeTopics(Set.of(topic)).allTopicNames().get(timeout + 1_000, TimeUnit.MILLISECONDS);
      ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
      ConfigEntry limit = client.describeConfigs(List.of(resource)).all().get(timeout + 1_000, TimeUnit.MILLISECONDS)
          .get(resource).get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG);
      topicLimits.put(topic, limit == null || limit.value() == null ? Long.MAX_VALUE : Long.parseLong(limit.value()));
    } catch (ExecutionException e) {
      if (e.getCause() instanceof UnknownTopicOrPartitionException) {
        throw new InvalidConfigurationException("Kafka topic '" + topic + "' does not exist at " + bootstrap
            + ": create it (with the live topic's partition count)");
      }
      throw new PublishUnavailableException("cannot use Kafka at " + bootstrap + " (" + e.getCause()
          + "): check the address and that the broker runs", null);
    } catch (TimeoutException e) {
      throw new PublishUnavailableException("Kafka at " + bootstrap + " did not answer within " + timeout
          + " ms: check the address and that the broker runs", null);
    } catch (KafkaException e) {
      throw new InvalidConfigurationException("cannot use Kafka at '" + bootstrap + "': " + e.getMessage());
    }
  }

  /** Refuses a record larger, in a batch of its own, than the producer or its topic takes. */
  public void checkSize(ProducerRecord<byte[], byte[]> r) {
    int key = r.key() == null ? 0 : r.key().length;
    int value = r.value().length;
    long headers = 0;
    int headerCount = 0;
    for (Header h : r.headers()) {
      int name = h.key().getBytes(StandardCharsets.UTF_8).length;
      headers += varintSize(name) + name + varintSize(h.value().length) + h.value().length;
      headerCount++;
    }
    long body = 3 // attributes, timestamp delta and offset delta of the batch's only record
        + varintSize(r.key() == null ? -1 : key) + key + varintSize(value) + value
        + varintSize(headerCount) + headers;
    long size = BATCH_OVERHEAD + varintSize((int) Math.min(Integer.MAX_VALUE, body)) + body;
    long topicLimit = topicLimits.getOrDefault(r.topic(), Long.MAX_VALUE);
    boolean topicBound = topicLimit <= maxRequestSize;
    long limit = topicBound ? topicLimit : maxRequestSize;
    if (size > limit) {
      throw new PublishRejectedException("cannot go to Kafka: the record would be up to " + size + " bytes (value "
          + value + ", key " + key + ", headers " + headers + "), over the " + limit
          + (topicBound ? " bytes of topic " + r.topic() + "'s max.message.bytes: raise the topic's limit"
              : " bytes of the producer's max.request.size: raise max.request.size"), "RecordTooLargeException", null);
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
}
