/**
 * The Apache Kafka publisher: {@link io.mic.outbox.kafka.KafkaPublisher} is the dispatcher's
 * {@link io.mic.outbox.DispatchFn} (and {@link io.mic.outbox.BatchDispatchFn}) for Kafka;
 * {@link io.mic.outbox.kafka.KafkaHeaders} reads the headers on the consumer side.
 */
package io.mic.outbox.kafka;
