package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.internal.Causes;

/** A database call of the store failed (connection lost, statement rejected); the message says which table. */
public class OutboxStoreException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public OutboxStoreException(String message, Throwable cause) {
    super(message, cause);
  }

  /**
   * {@code t}'s message and those of its causes that add something, passwords masked: how the store words a
   * database failure, for a tool that reports one (the command line does).
   */
  public static String describe(Throwable t) {
    return Causes.describe(t);
  }

  /** {@code text} with passwords in URLs and {@code key=value} properties replaced by {@code ***}. */
  public static String redact(String text) {
    return Causes.redact(text);
  }
}
