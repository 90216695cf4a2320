/**
 * The RabbitMQ publisher: {@link io.mic.outbox.rabbitmq.RabbitMqPublisher} is the dispatcher's
 * {@link io.mic.outbox.DispatchFn} (and {@link io.mic.outbox.BatchDispatchFn}) for RabbitMQ, with publisher
 * confirms, mandatory routing and a bounded window of outstanding confirms.
 */
package io.mic.outbox.rabbitmq;
