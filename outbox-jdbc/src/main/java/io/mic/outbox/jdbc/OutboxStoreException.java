package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxException;

/** A database call of the store failed (connection lost, statement rejected); the message says which table. */
public class OutboxStoreException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public OutboxStoreException(String message, Throwable cause) {
    super(message, cause);
  }
}
