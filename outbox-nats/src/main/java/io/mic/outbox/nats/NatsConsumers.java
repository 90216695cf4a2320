package io.mic.outbox.nats;

import io.mic.outbox.DeliveryHandler;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.SchemaVersions;
import io.mic.outbox.spi.Deliveries;
import io.nats.client.Message;
import io.nats.client.impl.Headers;
import java.time.Duration;
import java.util.Objects;
import java.util.TreeSet;

/**
 * The consumer side on JetStream: the idempotency key of a message, and the usual acknowledgement policy
 * around an idempotent effect such as {@code JdbcInbox.runOnce}.
 *
 * <pre>{@code
 * Dispatcher d = connection.createDispatcher();
 * js.subscribe("order.created", d, msg -> NatsConsumers.handle(msg,
 *     eventId -> inbox.runOnce("billing", eventId, tx -> createInvoice(tx, msg))), false, options);
 * }</pre>
 */
public final class NatsConsumers {
  /** How long JetStream waits before delivering a message again after its handler failed the first time. */
  public static final Duration FIRST_REDELIVERY_DELAY = Duration.ofSeconds(1);
  /** The delay doubles with each failed delivery up to this. */
  public static final Duration MAX_REDELIVERY_DELAY = Duration.ofMinutes(5);

  private NatsConsumers() {}

  /**
   * The id to deduplicate on: {@code x-original-event-id} for a replay, else {@code x-event-id}.
   *
   * @throws OutboxException if the message carries neither header (it was not published by MIC Outbox), or
   *     an id no inbox can keep ({@link OutboxHeaders#keyProblem})
   */
  public static String idempotencyKey(Message message) {
    Objects.requireNonNull(message, "message");
    Headers headers = message.getHeaders();
    String key = headers == null ? null : OutboxHeaders.idempotencyKey(headers::getFirst);
    if (key == null || key.isBlank()) {
      throw new OutboxException("the message on " + message.getSubject() + " carries no event id: expected header "
          + OutboxHeaders.EVENT_ID + " (live) or " + OutboxHeaders.ORIGINAL_EVENT_ID + " (replay); headers present: "
          + (headers == null ? "none" : new TreeSet<>(headers.keySet())));
    }
    String problem = OutboxHeaders.keyProblem("its event id", key);
    if (problem != null) {
      throw new OutboxException("the message on " + message.getSubject() + " carries an event id no inbox can"
          + " keep: " + problem);
    }
    return key;
  }

  /**
   * Runs {@code handler} with the message's idempotency key and settles the message by the outcome, which it
   * returns: applied or duplicate: {@code ack()}; the handler threw: {@code nakWithDelay}, so JetStream
   * delivers it again after {@link #FIRST_REDELIVERY_DELAY}, doubling with each failed delivery up to
   * {@link #MAX_REDELIVERY_DELAY}, and the failure is logged at WARN; no event id, or one no inbox can keep:
   * {@code term()}, since no redelivery can fix that. It never throws the handler's failure, so it is safe as
   * the whole body of a message handler. The delay keeps a message that always fails from being delivered
   * again at once, ahead of every message behind it; the consumer's {@code MaxDeliver} bounds how often it
   * comes back.
   */
  public static DeliveryOutcome handle(Message message, DeliveryHandler handler) {
    return handle(message, SchemaVersions.ANY, handler);
  }

  /**
   * As {@link #handle(Message, DeliveryHandler)}, for a consumer that reads the schema versions {@code accepts}
   * declares for the message's subject: a message with a newer {@code x-schema-version} never reaches the
   * handler; it is nak-ed with the same growing delay as a failure ({@link DeliveryOutcome#REDELIVERED}) and a
   * WARN names the fix, so it is applied once a consumer that reads it is deployed.
   */
  public static DeliveryOutcome handle(Message message, SchemaVersions accepts, DeliveryHandler handler) {
    Objects.requireNonNull(accepts, "accepts");
    Objects.requireNonNull(handler, "handler");
    DeliveryOutcome outcome;
    try {
      String key = idempotencyKey(message);
      outcome = Deliveries.attempt(handler, key, "subject " + message.getSubject(), accepts, message.getSubject(),
          message.getHeaders().getFirst(OutboxHeaders.SCHEMA_VERSION));
    } catch (OutboxException e) {
      outcome = Deliveries.rejected(e.getMessage());
    }
    switch (outcome) {
      case REDELIVERED -> message.nakWithDelay(redeliveryDelay(message));
      case REJECTED -> message.term();
      default -> message.ack();
    }
    return outcome;
  }

  /**
   * JetStream delivers a nak-ed message again before any new one: without a delay, a message that always
   * fails is all a consumer fetching one at a time ever sees.
   */
  private static Duration redeliveryDelay(Message message) {
    long failed = message.isJetStream() ? Math.max(1, message.metaData().deliveredCount()) : 1;
    Duration delay = FIRST_REDELIVERY_DELAY.multipliedBy(1L << Math.min(failed - 1, 20));
    return delay.compareTo(MAX_REDELIVERY_DELAY) < 0 ? delay : MAX_REDELIVERY_DELAY;
  }
}
