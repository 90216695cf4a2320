package io.mic.outbox;

/**
 * Publishes one event to the broker. Returning normally means the broker has accepted the event (for
 * JetStream: the PubAck arrived); the dispatcher then marks it {@code DISPATCHED}.
 *
 * <p>Throw to report a failure: {@link PublishUnavailableException} when the broker is unreachable (no
 * attempt is counted), any other exception when this event failed (an attempt is counted and the event
 * is retried with backoff, then moved to the DLQ). An outcome you cannot know, such as a timeout waiting
 * for the acknowledgement, is a failure, never a success: delivery is at-least-once.
 *
 * <pre>{@code
 * DispatchFn publish = event -> producer.send(event.topic(), event.payload()).get(5, SECONDS);
 * }</pre>
 */
@FunctionalInterface
public interface DispatchFn {
  void dispatch(OutboxEvent event) throws Exception;
}
