package io.mic.outbox;

/**
 * How a broker module's consumer helper settled one message ({@code NatsConsumers.handle},
 * {@code RabbitMqConsumers.handle}, {@code KafkaConsumers.handle}). The helpers return it instead of throwing,
 * so that a failed effect never escapes into the broker client's callback, where it would stop the consumer
 * (an {@code amqp-client} {@code DeliverCallback} that throws closes its channel).
 */
public enum DeliveryOutcome {
  /** The handler applied the effect now; the message was acknowledged. */
  APPLIED,
  /** The handler found the key already processed; the message was acknowledged. */
  DUPLICATE,
  /**
   * The handler threw, so nothing was committed: the message was settled to be delivered again (RabbitMQ: a
   * nack with requeue; NATS: a nak with a delay; Kafka: the partition is sought back to it), and the failure
   * was logged at WARN.
   */
  REDELIVERED,
  /**
   * The message carries no event id, or one no inbox can keep: no redelivery can fix that, so the handler was
   * not called and the message was settled for good (RabbitMQ: a nack without requeue, to the queue's
   * dead-letter exchange if it has one; NATS: {@code term()}; Kafka: committed past), and logged at WARN.
   */
  REJECTED;

  /** The outcome of a handler that returned {@code applied} ({@link DeliveryHandler#handle}). */
  public static DeliveryOutcome of(boolean applied) {
    return applied ? APPLIED : DUPLICATE;
  }
}
