package io.mic.outbox;

/**
 * Thrown by a {@link DispatchFn} when the broker refused this event for a reason that lies with the event
 * or its destination: too large for the broker, a subject or topic the broker will never take, a message
 * returned as unroutable, a header the client cannot encode. The dispatcher counts an attempt, retries with
 * backoff and moves the event to the DLQ after {@code maxAttempts}, as it does for any failure that is not
 * a {@link PublishUnavailableException}.
 *
 * <pre>{@code
 * catch (PublishRejectedException e) { log.warn("the broker refused the event: {}", e.code()); }
 * }</pre>
 */
public class PublishRejectedException extends OutboxException {
  private static final long serialVersionUID = 1L;

  private final String code;

  /** @param code the broker's name for the refusal ({@link #code()}), {@code null} when there is none */
  public PublishRejectedException(String message, String code, Throwable cause) {
    super(message, cause);
    this.code = code;
  }

  /**
   * The broker's name for the refusal: JetStream's API error code ({@code "10054"}: message too large), the
   * AMQP reply code of RabbitMQ ({@code "312"}: no route, {@code "406"}: precondition failed), the simple name
   * of Kafka's exception ({@code "RecordTooLargeException"}); {@code null} when the client refused the message
   * before sending it.
   */
  public String code() {
    return code;
  }
}
