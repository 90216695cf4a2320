package io.mic.replay;

import io.mic.outbox.OutboxException;

/** Root of the exceptions a replay throws. */
public class ReplayException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public ReplayException(String message) {
    super(message);
  }

  public ReplayException(String message, Throwable cause) {
    super(message, cause);
  }
}
