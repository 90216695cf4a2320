package io.mic.outbox.kafka.internal;

import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A publisher's producer, replaced after a failure that leaves a producer unusable for good. A producer whose
 * credentials Kafka refused stops sending, even once the broker accepts them (a user created later, a password
 * rotated on the broker first); an idempotent producer whose state turned fatal (fenced, an out-of-order
 * sequence, a version or cluster permission it lacks) fails every later send. The publisher's own producer is
 * then closed and a new one created, at most once per renewal interval; sends still in flight on the old one
 * fail as unavailable. The application's producer cannot be replaced here: that is said once per failure.
 */
public final class ProducerRenewal {
  private static final Logger LOG = LoggerFactory.getLogger(ProducerRenewal.class);

  /** Creates a producer of the publisher's own; null when it publishes with the application's. */
  private final Supplier<Producer<byte[], byte[]>> newProducer;
  private final Duration interval;
  private volatile Producer<byte[], byte[]> producer;
  /** The failure a send reported that makes the next batch replace the producer; null: none. */
  private volatile Throwable fatal;
  private long renewedAt; // System.nanoTime(), guarded by this
  private boolean closed; // guarded by this

  public ProducerRenewal(Producer<byte[], byte[]> producer, Supplier<Producer<byte[], byte[]>> newProducer,
      Duration interval) {
    this.producer = producer;
    this.newProducer = newProducer;
    this.interval = interval;
    this.renewedAt = System.nanoTime() - interval.toNanos();
  }

  /** The producer for the next batch: a new one when the last one failed for good and a renewal is due. */
  public Producer<byte[], byte[]> current() {
    return fatal != null ? renewIfDue() : producer;
  }

  /** Records the failures of a batch sent with {@code used}; a fatal one makes the next batch replace it. */
  public void report(Producer<byte[], byte[]> used, List<Throwable> failures) {
    if (fatal != null || used != producer) {
      return; // known already, or a batch that ran on a producer replaced since
    }
    for (Throwable failure : failures) {
      Throwable cause = fatalCause(failure);
      if (cause != null) {
        fatal = cause;
        return;
      }
    }
  }

  /**
   * The failure in {@code failure}'s causes that leaves a producer unusable for good, or {@code null}: failed
   * authentication, or a fatal state of the idempotent producer.
   */
  public static Throwable fatalCause(Throwable failure) {
    for (Throwable t = failure; t != null; t = t.getCause()) {
      if (t instanceof AuthenticationException || t instanceof ProducerFencedException
          || t instanceof OutOfOrderSequenceException || t instanceof UnsupportedVersionException
          || t instanceof ClusterAuthorizationException) {
        return t;
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return null;
  }

  private synchronized Producer<byte[], byte[]> renewIfDue() {
    Throwable cause = fatal;
    if (closed || cause == null || System.nanoTime() - renewedAt < interval.toNanos()) {
      return producer;
    }
    fatal = null;
    renewedAt = System.nanoTime();
    String what = cause instanceof AuthenticationException ? "Kafka refused the producer's credentials"
        : "the Kafka producer hit a fatal error (" + cause.getClass().getSimpleName() + ")";
    if (newProducer == null) {
      LOG.warn("{}; the publisher cannot replace the application's producer: recreate it if its sends keep"
          + " failing", what);
      return producer;
    }
    Producer<byte[], byte[]> renewed;
    try {
      renewed = newProducer.get();
    } catch (KafkaException e) {
      LOG.warn("{} and a new producer could not be created ({}); the old one is kept and replaced later", what,
          e.getMessage());
      return producer;
    }
    Producer<byte[], byte[]> failed = producer;
    producer = renewed;
    failed.close(Duration.ZERO);
    LOG.warn("{}: closed it and replaced it by a new producer", what);
    return renewed;
  }

  /**
   * Whether the producer has a connection to a broker open now (its {@code connection-count} metric). After a
   * failed send the producer keeps reconnecting on its own, within {@code reconnect.backoff.max.ms} (1 s by
   * default), so this turns true soon after a broker is back.
   */
  public boolean connected() {
    for (var entry : producer.metrics().entrySet()) {
      MetricName name = entry.getKey();
      if (name.name().equals("connection-count") && name.group().equals("producer-metrics")) {
        return entry.getValue().metricValue() instanceof Double count && count > 0;
      }
    }
    return false;
  }

  /** Closes the producer if it is the publisher's own; none is created after this. */
  public void close(Duration timeout) {
    Producer<byte[], byte[]> own;
    synchronized (this) {
      own = closed || newProducer == null ? null : producer;
      closed = true;
    }
    if (own != null) {
      own.close(timeout);
    }
  }
}
