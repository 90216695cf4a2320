package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxException;

/** The database behind the DataSource is not one MIC Outbox supports (or its version is too old). */
public class UnsupportedDatabaseException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public UnsupportedDatabaseException(String message) {
    super(message);
  }
}
