package io.mic.outbox.archive;

import io.mic.outbox.OutboxException;

/**
 * An archive could not be read or written: an unreadable file or record (the message names the file and
 * line), ClickHouse unreachable or refusing a request. Messages never quote credentials, and never rows
 * of a refused insert. The archiver reports it as its {@code ArchiveException}, the replay as its
 * {@code ReplayInputException}, with the same message.
 */
public class ArchiveAccessException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public ArchiveAccessException(String message) {
    super(message);
  }

  public ArchiveAccessException(String message, Throwable cause) {
    super(message, cause);
  }
}
