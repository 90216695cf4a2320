package io.mic.outbox;

/** Root of every exception MIC Outbox throws. Unchecked: callers handle what they can act on. */
public class OutboxException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public OutboxException(String message) {
    super(message);
  }

  public OutboxException(String message, Throwable cause) {
    super(message, cause);
  }
}
