package io.mic.outbox;

import java.time.Duration;

/**
 * Receives what dispatchers do, so metrics and alerts never parse logs. Every method has an empty
 * default: implement what you need. Called on the dispatching thread, so keep it quick; an exception
 * thrown here is logged and ignored, it never stops dispatch.
 *
 * <pre>{@code
 * OutboxListener metrics = new OutboxListener() {
 *   public void onDispatched(OutboxEvent e, Duration publishTime) { counter(e.topic()).increment(); }
 * };
 * }</pre>
 */
public interface OutboxListener {

  OutboxListener NONE = new OutboxListener() {};

  /** The event was published and marked {@code DISPATCHED}. */
  default void onDispatched(OutboxEvent event, Duration publishTime) {}

  /** The event failed and will be tried again after {@code delay}. */
  default void onRetryScheduled(OutboxEvent event, Duration delay, String error) {}

  /** The event ran out of attempts and is now in the {@code DLQ}. */
  default void onDeadLettered(OutboxEvent event, String error) {}

  /**
   * A mark changed nothing: the event's lease had expired and another worker claimed it (or an operator
   * changed the row). The event may be published twice; consumers absorb that by being idempotent.
   */
  default void onLeaseLost(OutboxEvent event) {}

  /** The event was put back untried, without counting an attempt, for {@code reason}. */
  default void onReleased(OutboxEvent event, ReleaseReason reason) {}

  /** A publication has been running for {@code running}, longer than half the lease: see the logs. */
  default void onPublishStalled(OutboxEvent event, String worker, Duration running) {}

  /** One {@link OutboxDispatcher#dispatchOnce()} finished (not called for empty polls). */
  default void onBatch(DispatchResult result, Duration elapsed) {}

  /** A poll failed, for example because the database was unreachable; the worker keeps polling. */
  default void onPollFailed(Throwable error) {}
}
