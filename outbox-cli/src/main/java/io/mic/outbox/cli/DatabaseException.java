package io.mic.outbox.cli;

/** The database cannot be reached or used; exit code 2, the message says what to check. */
final class DatabaseException extends RuntimeException {
  DatabaseException(String message, Throwable cause) {
    super(message, cause);
  }
}
