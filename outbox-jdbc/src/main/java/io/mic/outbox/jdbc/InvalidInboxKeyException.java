package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxException;

/**
 * A consumer name or event id given to the {@link JdbcInbox} is missing, blank, too long or padded with
 * whitespace, or a message carries no event id header. Nothing was written; a message that raises this
 * will raise it again, so route it to your own dead letters rather than retrying it.
 */
public class InvalidInboxKeyException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public InvalidInboxKeyException(String message) {
    super(message);
  }
}
