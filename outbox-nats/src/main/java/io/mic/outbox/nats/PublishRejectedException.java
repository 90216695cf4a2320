package io.mic.outbox.nats;

import io.mic.outbox.OutboxException;

/**
 * JetStream refused this event, for a reason that lies with the event (for example a payload larger
 * than the stream's {@code max_msg_size}). The dispatcher counts an attempt, retries with backoff and
 * moves the event to the DLQ after {@code maxAttempts}, as it does for any failure that is not a
 * {@link io.mic.outbox.PublishUnavailableException}.
 *
 * <pre>{@code
 * catch (PublishRejectedException e) { log.warn("JetStream error {}", e.apiErrorCode()); }
 * }</pre>
 */
public class PublishRejectedException extends OutboxException {
  private static final long serialVersionUID = 1L;

  private final int apiErrorCode;

  public PublishRejectedException(String message, int apiErrorCode, Throwable cause) {
    super(message, cause);
    this.apiErrorCode = apiErrorCode;
  }

  /** The JetStream API error code (10054: message too large), or -1 when the client refused the message. */
  public int apiErrorCode() {
    return apiErrorCode;
  }
}
