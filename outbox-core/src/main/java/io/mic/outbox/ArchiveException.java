package io.mic.outbox;

/**
 * An archive could not be written or read: a sink failed (the archiver then purges nothing of the page it
 * carried), an archive file or record is unreadable (the message names the file and line), ClickHouse is
 * unreachable or refused a request. The one archive exception of the archiver, the sinks and the archive
 * reader; the replay reports it as its {@code ReplayInputException}, with the same message. Messages never
 * quote credentials, nor rows of a refused insert.
 */
public class ArchiveException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public ArchiveException(String message) {
    super(message);
  }

  public ArchiveException(String message, Throwable cause) {
    super(message, cause);
  }
}
