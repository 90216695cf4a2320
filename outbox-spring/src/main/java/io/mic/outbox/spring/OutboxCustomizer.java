package io.mic.outbox.spring;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;

/**
 * Adjusts what the auto-configuration builds, declared as a bean: the publisher the dispatcher publishes
 * through, and each event {@link TransactionalOutbox} appends. With an {@code OpenTelemetry} bean the
 * auto-configuration declares one itself: it gives each event the current trace context and publishes in a
 * {@code PRODUCER} span ({@code mic.outbox.tracing.enabled=false} turns that off). Several apply in
 * {@code @Order}.
 *
 * <pre>{@code
 * @Bean
 * OutboxCustomizer auditing(AuditLog audit) {
 *   return new OutboxCustomizer() {
 *     @Override public DispatchFn publisher(DispatchFn publisher) {
 *       return event -> { publisher.dispatch(event); audit.published(event.id()); };
 *     }
 *   };
 * }
 * }</pre>
 *
 * <p>A wrapper written as a lambda publishes one event at a time; {@code DispatchDecorator.wrap} (package
 * {@code io.mic.outbox.spi}) keeps a batch publisher's batches.
 */
public interface OutboxCustomizer {
  /** The publisher the dispatcher uses instead of {@code publisher} (default: {@code publisher}). */
  default DispatchFn publisher(DispatchFn publisher) {
    return publisher;
  }

  /** The event appended instead of {@code event}, in the caller's thread (default: {@code event}). */
  default OutboxEvent beforeAppend(OutboxEvent event) {
    return event;
  }
}
