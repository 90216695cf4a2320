/**
 * OpenTelemetry tracing for MIC Outbox: {@link io.mic.outbox.opentelemetry.OutboxTracing} captures the
 * appending span's context into the event, wraps a publisher in {@code PRODUCER} spans, and lets the
 * consumer continue the trace from the message headers.
 */
package io.mic.outbox.opentelemetry;
