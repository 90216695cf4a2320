package io.mic.outbox.kafka.internal;

import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;

/** What a publisher can tell of its producer without sending: whether it holds a connection to a broker. */
public final class ProducerState {
  private ProducerState() {}

  /**
   * Whether the producer has a connection to a broker open now (its {@code connection-count} metric). After a
   * failed send the producer keeps reconnecting on its own, within {@code reconnect.backoff.max.ms} (1 s by
   * default), so this turns true soon after a broker is back.
   */
  public static boolean connected(Producer<?, ?> producer) {
    for (var entry : producer.metrics().entrySet()) {
      MetricName name = entry.getKey();
      if (name.name().equals("connection-count") && name.group().equals("producer-metrics")) {
        Metric metric = entry.getValue();
        return metric.metricValue() instanceof Double count && count > 0;
      }
    }
    return false;
  }
}
