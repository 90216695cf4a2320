package io.mic.outbox.cli;

/** A check the operator asked for failed; exit code 1. */
final class CheckFailedException extends RuntimeException {
  CheckFailedException(String message) {
    super(message);
  }
}
