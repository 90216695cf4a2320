package io.mic.outbox.kafka.internal;

import io.mic.outbox.OutboxException;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.errors.RecordBatchTooLargeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.SerializationException;

/**
 * Sorts a failed send into "Kafka is not available, or the outcome is unknown" (no attempt is counted)
 * or "Kafka refused this record" (an attempt is counted, then the DLQ).
 *
 * <p>Rejected: the record is too large (for {@code max.request.size} or the broker's
 * {@code message.max.bytes}), the topic name is invalid, the producer is not authorized to write the topic
 * (or cluster), the record cannot be serialized or the broker finds it invalid or against a policy.
 * Sending the same record again cannot succeed, and the dispatcher must not stall an aggregate on it
 * forever. Everything else is unavailable: every {@code RetriableException} (timeouts, not enough
 * replicas, leader changes, network errors, a topic missing from the metadata), failed authentication
 * (the credentials are wrong for every event alike), a closed producer and any error whose outcome is
 * unknown. Such an event is published again later and may then reach the topic twice.
 */
public final class KafkaErrors {
  private static final int MAX_CAUSES = 5;

  private KafkaErrors() {}

  /** The exception to report for {@code error}, raised while publishing {@code what} (id and topic). */
  public static OutboxException classify(Throwable error, String what) {
    Throwable t = unwrap(error);
    if (isRejection(t)) {
      return new PublishRejectedException("Kafka rejected " + what + ": " + t.getMessage(),
          t.getClass().getSimpleName(), t);
    }
    if (t instanceof OutboxException known) {
      return known;
    }
    return new PublishUnavailableException("Kafka did not acknowledge " + what + " (" + t.getClass().getSimpleName()
        + ": " + t.getMessage() + "): the outcome is unknown, the event will be published again", t);
  }

  /**
   * The messages of {@code t} and of its causes that add something, e.g. {@code "Failed to construct kafka
   * producer; caused by: Failed to create new NetworkClient; JAAS config entry not terminated by semi-colon"}:
   * Kafka wraps the reason an operator can act on two levels deep. A bootstrap address with credentials never
   * reaches a client ({@link BootstrapServers}), so no message repeats one.
   */
  public static String describe(Throwable t) {
    List<String> parts = new ArrayList<>();
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable c = t; c != null && seen.put(c, true) == null && parts.size() < MAX_CAUSES; c = c.getCause()) {
      String m = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage().strip();
      if (parts.stream().noneMatch(p -> p.contains(m))) {
        parts.add(m);
      }
    }
    return parts.size() == 1 ? parts.get(0)
        : parts.get(0) + "; caused by: " + String.join("; ", parts.subList(1, parts.size()));
  }

  /** True when sending the same record again cannot succeed. */
  public static boolean isRejection(Throwable t) {
    return t instanceof RecordTooLargeException || t instanceof RecordBatchTooLargeException
        || t instanceof InvalidTopicException || t instanceof AuthorizationException
        || t instanceof SerializationException || t instanceof InvalidRecordException
        || t instanceof PolicyViolationException;
  }

  /** The producer wraps the real cause in execution and plain Kafka exceptions; peel them off. */
  private static Throwable unwrap(Throwable error) {
    Throwable t = error;
    while ((t instanceof ExecutionException || t instanceof CompletionException
        || (t != null && t.getClass() == KafkaException.class)) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /** The producer's interrupt as the {@link InterruptedException} callers expect, the flag cleared. */
  public static InterruptedException interrupted(InterruptException e) {
    Thread.interrupted(); // InterruptException set the flag again; the caller sees InterruptedException instead
    InterruptedException ie = new InterruptedException("interrupted while publishing to Kafka");
    ie.initCause(e);
    return ie;
  }

  public static void flush(Producer<byte[], byte[]> producer) throws InterruptedException {
    try {
      producer.flush();
    } catch (InterruptException e) {
      throw interrupted(e);
    }
  }
}
