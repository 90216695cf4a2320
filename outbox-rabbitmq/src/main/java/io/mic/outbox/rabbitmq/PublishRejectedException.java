package io.mic.outbox.rabbitmq;

import io.mic.outbox.OutboxException;

/**
 * RabbitMQ refused this event for a reason that lies with the event: it was returned as unroutable
 * (reply code 312, no queue bound for its routing key), or it was larger than the broker's
 * {@code max_message_size} (406), or the client could not encode it. The dispatcher counts an attempt,
 * retries with backoff and moves the event to the DLQ after {@code maxAttempts}, as it does for any
 * failure that is not a {@link io.mic.outbox.PublishUnavailableException}.
 *
 * <pre>{@code
 * catch (PublishRejectedException e) { log.warn("RabbitMQ reply code {}", e.replyCode()); }
 * }</pre>
 */
public class PublishRejectedException extends OutboxException {
  private static final long serialVersionUID = 1L;

  /** The AMQP reply code of a returned message: no queue is bound for its routing key. */
  public static final int NO_ROUTE = 312;
  /** The AMQP reply code of a channel the broker closed because of this message (e.g. too large). */
  public static final int PRECONDITION_FAILED = 406;

  private final int replyCode;

  public PublishRejectedException(String message, int replyCode, Throwable cause) {
    super(message, cause);
    this.replyCode = replyCode;
  }

  /** The AMQP reply code ({@link #NO_ROUTE}, {@link #PRECONDITION_FAILED}), or -1 when the client refused the message. */
  public int replyCode() {
    return replyCode;
  }
}
