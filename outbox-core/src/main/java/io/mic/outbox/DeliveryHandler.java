package io.mic.outbox;

/**
 * A consumer's handling of one delivered message, given its idempotency key (the outbox event id, live
 * or replayed; see {@link OutboxHeaders#idempotencyKey}). The consumer helpers of the broker modules read
 * the key from the message, call this, and acknowledge or reject the message by the outcome.
 *
 * <pre>{@code
 * NatsConsumers.handle(msg, eventId -> inbox.runOnce("billing", eventId, tx -> createInvoice(tx, msg)));
 * }</pre>
 */
@FunctionalInterface
public interface DeliveryHandler {
  /**
   * @return {@code true} if the effect was applied now, {@code false} if the key was already processed (a
   *     duplicate); both acknowledge the message
   * @throws Exception the effect failed and nothing was committed: the message is to be delivered again
   */
  boolean handle(String idempotencyKey) throws Exception;
}
