package io.mic.outbox;

/** An event was rejected before it reached a store. The message names the field, the value and the fix. */
public class InvalidEventException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public InvalidEventException(String message) {
    super(message);
  }
}
