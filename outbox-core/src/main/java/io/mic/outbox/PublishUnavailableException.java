package io.mic.outbox;

/**
 * Thrown by a {@link DispatchFn} when the broker could not be reached or did not answer, so the event
 * itself is not at fault.
 *
 * <p>The dispatcher then stops the batch and puts the failed event and the rest of the batch back to
 * {@code PENDING} after the first retry delay, <em>without</em> counting an attempt: a long broker outage
 * delays events but never moves good events to the DLQ. Any other exception counts as a failed attempt.
 *
 * <pre>{@code
 * try { connection.publish(...); }
 * catch (IOException e) { throw new PublishUnavailableException("broker unreachable", e); }
 * }</pre>
 */
public class PublishUnavailableException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public PublishUnavailableException(String message) {
    super(message);
  }

  public PublishUnavailableException(String message, Throwable cause) {
    super(message, cause);
  }
}
