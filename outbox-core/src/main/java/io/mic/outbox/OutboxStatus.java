package io.mic.outbox;

/**
 * The life of an outbox row.
 *
 * <pre>
 * PENDING ──claim──▶ PROCESSING ──published──▶ DISPATCHED
 *    ▲                   │
 *    └──failed, retry────┘──failed maxAttempts times──▶ DLQ ──operator redrive──▶ PENDING
 * </pre>
 *
 * Without claims a row goes from {@code PENDING} straight to {@code DISPATCHED}, back to {@code PENDING}
 * with a later {@code nextAttemptAt}, or to {@code DLQ}.
 */
public enum OutboxStatus {
  PENDING,
  PROCESSING,
  DISPATCHED,
  DLQ;

  /** {@code DISPATCHED} and {@code DLQ} end a row's life; only an operator's redrive leaves {@code DLQ}. */
  public boolean isTerminal() {
    return this == DISPATCHED || this == DLQ;
  }
}
