/**
 * The NATS JetStream publisher: {@link io.mic.outbox.nats.NatsJetStreamPublisher} is the dispatcher's
 * {@link io.mic.outbox.DispatchFn} (and {@link io.mic.outbox.BatchDispatchFn}) for JetStream.
 */
package io.mic.outbox.nats;
