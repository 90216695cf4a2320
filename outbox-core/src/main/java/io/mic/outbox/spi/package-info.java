/**
 * Advanced SPI for authors of broker publishers and of wrappers around them. Users implement
 * {@link io.mic.outbox.DispatchFn} (or {@link io.mic.outbox.BatchDispatchFn} to publish whole batches) and never
 * meet these types.
 *
 * <ul>
 *   <li>{@link io.mic.outbox.spi.ChannelDispatchFn}: a batch publisher whose acknowledgements arrive
 *       asynchronously opens a {@link io.mic.outbox.spi.BatchChannel} per dispatcher worker, through which the
 *       worker sends its next batch before the last one's acknowledgements are in (NATS JetStream's publisher).
 *   <li>{@link io.mic.outbox.spi.DispatchDecorator}: the way to wrap a publisher (tracing, metrics, faults): the
 *       wrapper is what the wrapped publisher is, channel included, so wrapping never costs batching or
 *       overlapping batches. A wrapper written by hand that forwards {@code dispatchBatch} but hides the channel
 *       is reported with a warning the first time a dispatcher worker reaches the publisher through it.
 * </ul>
 */
package io.mic.outbox.spi;
