package io.mic.outbox;

import io.mic.outbox.OutboxException;

/** An archive write failed: the events it carried were not purged from the outbox. */
public class ArchiveException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public ArchiveException(String message) {
    super(message);
  }

  public ArchiveException(String message, Throwable cause) {
    super(message, cause);
  }
}
