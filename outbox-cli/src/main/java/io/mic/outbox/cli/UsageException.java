package io.mic.outbox.cli;

/** Arguments that cannot work together; exit code 2, the message says what to change. */
final class UsageException extends RuntimeException {
  UsageException(String message) {
    super(message);
  }
}
