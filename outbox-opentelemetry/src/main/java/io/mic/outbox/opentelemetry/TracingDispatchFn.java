package io.mic.outbox.opentelemetry;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;

/**
 * A publisher that runs every publication in a {@code PRODUCER} span, built by
 * {@link OutboxTracing#wrap(DispatchFn)}.
 *
 * <p>The span is named {@code publish <destination>} and carries {@code messaging.system},
 * {@code messaging.destination.name}, {@code messaging.message.id} (the event id),
 * {@code messaging.operation.name = publish} and {@code messaging.operation.type = send}. Its parent is
 * the context the event captured at append ({@link OutboxEvent#traceParent()}), so the publication joins
 * the request's trace even though it happens later on a dispatcher thread; an event without one starts a
 * new trace. A failure sets the status {@code ERROR}, {@code error.type} (the exception's class) and
 * records the exception.
 *
 * <p>The publisher receives a copy of the event whose traceparent is the PRODUCER span's, so the
 * {@code traceparent} header on the broker makes the consumer's span a child of the publication, not a
 * sibling: request → publish → process, which is how the messaging conventions link a message's
 * creation to its processing. The stored event keeps the appending context.
 */
class TracingDispatchFn implements DispatchFn {
  final OutboxTracing tracing;
  private final DispatchFn delegate;

  TracingDispatchFn(OutboxTracing tracing, DispatchFn delegate) {
    this.tracing = tracing;
    this.delegate = delegate;
  }

  @Override
  public void dispatch(OutboxEvent event) throws Exception {
    Span span = start(event);
    try (Scope ignored = span.makeCurrent()) {
      delegate.dispatch(carrying(event, span));
    } catch (Exception | Error e) {
      failed(span, e);
      throw e;
    } finally {
      span.end();
    }
  }

  final Span start(OutboxEvent event) {
    String destination = tracing.destinationOf(event);
    return tracing.tracer().spanBuilder(MessagingAttributes.PUBLISH + " " + destination)
        .setSpanKind(SpanKind.PRODUCER)
        .setParent(parentOf(event))
        .setAttribute(MessagingAttributes.SYSTEM, tracing.messagingSystem())
        .setAttribute(MessagingAttributes.DESTINATION_NAME, destination)
        .setAttribute(MessagingAttributes.MESSAGE_ID, event.id().toString())
        .setAttribute(MessagingAttributes.OPERATION_NAME, MessagingAttributes.PUBLISH)
        .setAttribute(MessagingAttributes.OPERATION_TYPE, MessagingAttributes.SEND)
        .startSpan();
  }

  /** The appending context when the event captured one, else whatever is current on this thread. */
  private static Context parentOf(OutboxEvent event) {
    String traceParent = event.traceParent();
    if (traceParent == null) {
      return Context.current();
    }
    return OutboxTracing.extract(Context.current(),
        name -> OutboxHeaders.TRACEPARENT.equals(name) ? traceParent : null);
  }

  /** The event as the publisher sends it: with the PRODUCER span's traceparent, when the span has one. */
  static OutboxEvent carrying(OutboxEvent event, Span span) {
    String traceParent = OutboxTracing.traceParentOf(span.getSpanContext());
    return traceParent == null || traceParent.equals(event.traceParent())
        ? event
        : event.toStored().traceParent(traceParent).build();
  }

  static void failed(Span span, Throwable error) {
    span.setStatus(StatusCode.ERROR);
    span.setAttribute(MessagingAttributes.ERROR_TYPE, error.getClass().getName());
    span.recordException(error);
  }
}
