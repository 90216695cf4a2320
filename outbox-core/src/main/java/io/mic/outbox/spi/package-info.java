/**
 * Advanced SPI for authors of broker publishers and of wrappers around them. Users implement
 * {@link io.mic.outbox.DispatchFn} (or {@link io.mic.outbox.BatchDispatchFn} to publish whole batches) and never
 * meet these types.
 *
 * <ul>
 *   <li>{@link io.mic.outbox.spi.ChannelDispatchFn}: a batch publisher whose acknowledgements arrive
 *       asynchronously (NATS JetStream's publisher), through a {@link io.mic.outbox.spi.BatchChannel} per worker.
 *   <li>{@link io.mic.outbox.spi.DispatchDecorator}: the way to wrap a publisher (tracing, metrics, faults)
 *       without losing its batching, its channel or its probe.
 *   <li>{@link io.mic.outbox.spi.BrokerProbe}: a publisher's quick "is the broker back?", which ends a worker's
 *       wait during an outage within moments of the broker's return.
 * </ul>
 */
package io.mic.outbox.spi;
