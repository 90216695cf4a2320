package io.mic.outbox;

/** How one event's publication ended, decided in one place for every publisher shape. */
enum Outcome {
  PUBLISHED, UNAVAILABLE, STOPPING, FAILED;

  /** @param error the event's failure, or {@code null} when the broker acknowledged it */
  static Outcome of(Exception error) {
    if (error == null) {
      return PUBLISHED;
    }
    if (error instanceof PublishUnavailableException) {
      return UNAVAILABLE;
    }
    if (error instanceof InterruptedException || Thread.currentThread().isInterrupted()) {
      return STOPPING; // stop() interrupted the publisher
    }
    return FAILED;
  }
}
