package io.mic.outbox;

/**
 * Why a dispatcher put an event back untried, without counting an attempt
 * ({@link OutboxListener#onReleased(OutboxEvent, ReleaseReason)}), so that metrics can tell a broker outage
 * from a shutdown.
 *
 * <pre>{@code
 * public void onReleased(OutboxEvent e, ReleaseReason reason) {
 *   released.tag("reason", reason.name()).increment();
 * }
 * }</pre>
 */
public enum ReleaseReason {
  /** The broker could not be reached ({@link PublishUnavailableException}), or an earlier chunk of the batch found it so. */
  BROKER_UNAVAILABLE,
  /** The dispatcher is stopping: {@code stop()} or {@code close()} interrupted the worker. */
  STOPPING,
  /** The dispatcher was paused while a batch claimed ahead waited to be published. */
  PAUSED,
  /** Ordered mode: an earlier event of its aggregate did not go through in the same batch. */
  ORDER_BLOCKED
}
