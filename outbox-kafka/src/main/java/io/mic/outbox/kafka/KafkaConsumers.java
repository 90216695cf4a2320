package io.mic.outbox.kafka;

import io.mic.outbox.DeliveryHandler;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.SchemaVersions;
import io.mic.outbox.spi.Deliveries;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer side on Kafka: handles what one {@code poll} returned around an idempotent effect such as
 * {@code JdbcInbox.runOnce}, and commits the offsets of what was handled, so a poll loop never dies of a
 * failed effect.
 *
 * <pre>{@code
 * while (running) {
 *   KafkaConsumers.handle(consumer, consumer.poll(Duration.ofMillis(500)), (record, eventId) ->
 *       inbox.runOnce("billing", eventId, tx -> createInvoice(tx, record.value())));
 * }
 * }</pre>
 *
 * <p>The consumer must not commit by itself ({@code enable.auto.commit=false}): an offset committed before the
 * effect would lose the record if the effect then failed.
 */
public final class KafkaConsumers {
  private static final Logger LOG = LoggerFactory.getLogger(KafkaConsumers.class);

  private KafkaConsumers() {}

  /** A consumer's handling of one record, given its idempotency key ({@link DeliveryHandler} with the record). */
  @FunctionalInterface
  public interface RecordHandler<K, V> {
    /**
     * @return {@code true} if the effect was applied now, {@code false} if the key was already processed
     * @throws Exception the effect failed and nothing was committed: the record is to be handled again
     */
    boolean handle(ConsumerRecord<K, V> record, String idempotencyKey) throws Exception;
  }

  /**
   * Handles {@code records} partition by partition, each in offset order, and returns the outcomes in the order
   * handled: applied or duplicate: the next record; the handler threw: the failure is logged at WARN, the
   * partition is sought back to this record (the next {@code poll} returns it again) and its later records are
   * left for then, so they never overtake it; no event id, or one no inbox can keep: skipped for good (logged
   * at WARN). Then the offsets after the handled records are committed ({@code commitSync}); a commit refused
   * by a rebalance is logged, since the partition's new owner gets those records again and the inbox absorbs
   * them. A record whose effect always fails holds its partition: it is handled again at every poll.
   */
  public static <K, V> List<DeliveryOutcome> handle(Consumer<K, V> consumer, ConsumerRecords<K, V> records,
      RecordHandler<K, V> handler) {
    return handle(consumer, records, SchemaVersions.ANY, handler);
  }

  /**
   * As {@link #handle(Consumer, ConsumerRecords, RecordHandler)}, for a consumer that reads the schema versions
   * {@code accepts} declares for each record's topic: a record with a newer {@code x-schema-version} never
   * reaches the handler; its partition is sought back to it as after a failure
   * ({@link DeliveryOutcome#REDELIVERED}), so no later record of the partition overtakes it, and a WARN names the
   * fix. It is applied once a consumer that reads it is deployed; until then the partition waits on it.
   */
  public static <K, V> List<DeliveryOutcome> handle(Consumer<K, V> consumer, ConsumerRecords<K, V> records,
      SchemaVersions accepts, RecordHandler<K, V> handler) {
    Objects.requireNonNull(consumer, "consumer");
    Objects.requireNonNull(accepts, "accepts");
    Objects.requireNonNull(handler, "handler");
    List<DeliveryOutcome> outcomes = new ArrayList<>();
    Map<TopicPartition, OffsetAndMetadata> handled = new HashMap<>();
    for (TopicPartition partition : records.partitions()) {
      for (ConsumerRecord<K, V> record : records.records(partition)) {
        DeliveryOutcome outcome = handle(record, accepts, handler);
        outcomes.add(outcome);
        if (outcome == DeliveryOutcome.REDELIVERED) {
          consumer.seek(partition, new OffsetAndMetadata(record.offset(), record.leaderEpoch(), ""));
          break;
        }
        handled.put(partition, new OffsetAndMetadata(record.offset() + 1, record.leaderEpoch(), ""));
      }
    }
    if (!handled.isEmpty()) {
      commit(consumer, handled);
    }
    return outcomes;
  }

  private static <K, V> DeliveryOutcome handle(ConsumerRecord<K, V> record, SchemaVersions accepts,
      RecordHandler<K, V> handler) {
    String key;
    try {
      key = KafkaHeaders.idempotencyKey(record.headers());
    } catch (OutboxException e) {
      return Deliveries.rejected("the record at " + record.topic() + "-" + record.partition() + "@"
          + record.offset() + ": " + e.getMessage());
    }
    DeliveryHandler withRecord = eventId -> handler.handle(record, eventId);
    return Deliveries.attempt(withRecord, key, record.topic() + "-" + record.partition() + "@" + record.offset(),
        accepts, record.topic(), KafkaHeaders.toMap(record.headers()).get(OutboxHeaders.SCHEMA_VERSION));
  }

  private static void commit(Consumer<?, ?> consumer, Map<TopicPartition, OffsetAndMetadata> offsets) {
    try {
      consumer.commitSync(offsets);
    } catch (CommitFailedException | RebalanceInProgressException e) {
      LOG.warn("the offsets {} were not committed ({}): the partitions' next owner handles those records again,"
          + " and the inbox finds them processed", offsets, e.toString());
    }
  }
}
