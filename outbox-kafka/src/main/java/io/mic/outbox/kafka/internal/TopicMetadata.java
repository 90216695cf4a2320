package io.mic.outbox.kafka.internal;

import io.mic.outbox.PublishUnavailableException;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.clients.producer.BufferExhaustedException;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.errors.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a publisher learnt about topics: the ones the producer had metadata for (sending to them does not wait),
 * and the ones Kafka answered without, which are not tried again for a while.
 */
public final class TopicMetadata {
  private static final Logger LOG = LoggerFactory.getLogger(TopicMetadata.class);

  private final Duration recheck;
  /** Topics Kafka answered without, and until when ({@link System#nanoTime()}) their events are not sent. */
  private final Map<String, Long> missing = new ConcurrentHashMap<>();
  private final Set<String> known = ConcurrentHashMap.newKeySet();

  public TopicMetadata(Duration recheck) {
    this.recheck = recheck;
  }

  public boolean isKnown(String topic) {
    return known.contains(topic);
  }

  public void known(String topic) {
    known.add(topic);
  }

  /** The failure of {@code what} (an event of {@code topic}) while Kafka recently said it has no such topic, else null. */
  public PublishUnavailableException stillMissing(String topic, String what) {
    Long until = missing.get(topic);
    if (until == null) {
      return null;
    }
    if (System.nanoTime() - until >= 0) {
      missing.remove(topic, until);
      return null;
    }
    return new PublishUnavailableException("Kafka has no topic '" + topic + "' (at the last try): " + what
        + " waits without counting an attempt; create the topic, it is tried again within " + recheck);
  }

  /**
   * After send() failed at once: when it gave up on the topic's metadata although Kafka answered meanwhile,
   * the topic is missing, and its events go back at once for the recheck interval.
   *
   * @return whether the topic is missing
   */
  public boolean rememberIfMissing(Producer<byte[], byte[]> producer, String topic,
      PublishUnavailableException failure, long sendingNanos) {
    if (!isMetadataWait(failure) || !answeredSince(producer, sendingNanos)) {
      return false;
    }
    if (missing.put(topic, System.nanoTime() + recheck.toNanos()) == null) {
      LOG.warn("Kafka has no topic '{}': its events wait without counting attempts; it is tried again every {}",
          topic, recheck);
    }
    return true;
  }

  /** Whether {@code failure} is send() giving up on a topic's metadata (not on buffer space). */
  private static boolean isMetadataWait(PublishUnavailableException failure) {
    return failure.getCause() instanceof TimeoutException && !(failure.getCause() instanceof BufferExhaustedException);
  }

  /**
   * Whether the producer's metadata was refreshed since {@code sinceNanos} ({@code metadata-age}): Kafka
   * answered, so a topic it did not list is missing rather than Kafka down.
   */
  private static boolean answeredSince(Producer<byte[], byte[]> producer, long sinceNanos) {
    double waitedSeconds = (System.nanoTime() - sinceNanos) / 1e9;
    for (Map.Entry<MetricName, ? extends Metric> m : producer.metrics().entrySet()) {
      if (m.getKey().name().equals("metadata-age") && m.getKey().group().equals("producer-metrics")
          && m.getValue().metricValue() instanceof Double age) {
        return age < waitedSeconds;
      }
    }
    return false; // no such metric: as if Kafka had not answered
  }
}
