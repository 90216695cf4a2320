package io.mic.outbox.kafka;

import io.mic.outbox.OutboxException;

/**
 * Kafka refused this event for a reason that lies with the event or its topic: the record is larger than
 * {@code max.request.size} or the broker's {@code message.max.bytes}, the topic name is invalid, the
 * producer may not write to the topic, or the record could not be serialized. The dispatcher counts an
 * attempt, retries with backoff and moves the event to the DLQ after {@code maxAttempts}, as it does for
 * any failure that is not a {@link io.mic.outbox.PublishUnavailableException}.
 *
 * <pre>{@code
 * catch (PublishRejectedException e) { log.warn("Kafka refused the event: {}", e.errorName()); }
 * }</pre>
 */
public class PublishRejectedException extends OutboxException {
  private static final long serialVersionUID = 1L;

  private final String errorName;

  public PublishRejectedException(String message, String errorName, Throwable cause) {
    super(message, cause);
    this.errorName = errorName;
  }

  /** The simple name of Kafka's exception, e.g. {@code RecordTooLargeException}. */
  public String errorName() {
    return errorName;
  }
}
