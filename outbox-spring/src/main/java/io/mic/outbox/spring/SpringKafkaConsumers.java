package io.mic.outbox.spring;

import io.mic.outbox.DeliveryHandler;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.SchemaVersions;
import io.mic.outbox.kafka.KafkaHeaders;
import io.mic.outbox.spi.Deliveries;
import java.time.Duration;
import java.util.Objects;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.support.Acknowledgment;

/**
 * The inbox behind a spring-kafka {@code @KafkaListener} with manual acknowledgements
 * ({@code spring.kafka.listener.ack-mode=manual}): reads the event id from the record, runs the handler
 * (typically {@code JdbcInbox.runOnce}) and acknowledges by the outcome. Needs {@code spring-kafka} and
 * {@code outbox-kafka}.
 *
 * <pre>{@code
 * @KafkaListener(topics = "order.created", groupId = "billing")
 * void onOrder(ConsumerRecord<String, byte[]> record, Acknowledgment ack) {
 *   SpringKafkaConsumers.handle(record, ack, eventId ->
 *       inbox.runOnce("billing", eventId, tx -> createInvoice(tx, record.value())));
 * }
 * }</pre>
 */
public final class SpringKafkaConsumers {
  /** How long the container waits before it polls a record whose handler failed again. */
  public static final Duration REDELIVERY_DELAY = Duration.ofSeconds(1);

  private SpringKafkaConsumers() {}

  /**
   * Runs {@code handler} with the record's idempotency key and acknowledges by the outcome: applied or
   * duplicate: {@code acknowledge()}; the handler threw: {@code nack(REDELIVERY_DELAY)}, so the container
   * seeks back and delivers this record (and the partition's later ones) again after the delay, and a WARN; no
   * event id, or one no inbox can keep: {@code acknowledge()}, since no redelivery can fix that, and a WARN. It
   * never throws the handler's failure.
   */
  public static DeliveryOutcome handle(ConsumerRecord<?, ?> record, Acknowledgment ack, DeliveryHandler handler) {
    return handle(record, ack, SchemaVersions.ANY, handler);
  }

  /**
   * As {@link #handle(ConsumerRecord, Acknowledgment, DeliveryHandler)}, for a listener that reads the schema
   * versions {@code accepts} declares for the record's topic: a record with a newer {@code x-schema-version}
   * never reaches the handler; it is nack-ed with {@link #REDELIVERY_DELAY} like a failure (the partition waits
   * on it) and a WARN names the fix, so it is applied once a consumer that reads it is deployed.
   */
  public static DeliveryOutcome handle(ConsumerRecord<?, ?> record, Acknowledgment ack, SchemaVersions accepts,
      DeliveryHandler handler) {
    Objects.requireNonNull(record, "record");
    Objects.requireNonNull(ack, "ack");
    Objects.requireNonNull(accepts, "accepts");
    Objects.requireNonNull(handler, "handler");
    String where = record.topic() + "-" + record.partition() + "@" + record.offset();
    DeliveryOutcome outcome;
    try {
      String key = KafkaHeaders.idempotencyKey(record.headers());
      outcome = Deliveries.attempt(handler, key, where, accepts, record.topic(),
          KafkaHeaders.toMap(record.headers()).get(OutboxHeaders.SCHEMA_VERSION));
    } catch (OutboxException e) {
      outcome = Deliveries.rejected("the record at " + where + ": " + e.getMessage());
    }
    if (outcome == DeliveryOutcome.REDELIVERED) {
      ack.nack(REDELIVERY_DELAY);
    } else {
      ack.acknowledge();
    }
    return outcome;
  }
}
