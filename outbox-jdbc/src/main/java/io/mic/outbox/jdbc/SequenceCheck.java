package io.mic.outbox.jdbc;

/**
 * What {@link JdbcInbox#checkSequence} found for a message of an aggregate, against the last sequence
 * the consumer processed for that aggregate.
 */
public enum SequenceCheck {
  /** The next one (last + 1): now recorded as processed in the caller's transaction; apply it. */
  NEXT,
  /** At or below the last one processed: a redelivery or a stale copy; skip it (and acknowledge it). */
  DUPLICATE,
  /**
   * Beyond the next one: an earlier message of the aggregate has not been processed yet. Nothing was
   * recorded; hold it (nack with a delay, park it) until the missing ones arrive, or reject it.
   */
  GAP
}
