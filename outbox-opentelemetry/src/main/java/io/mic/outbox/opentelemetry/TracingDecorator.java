package io.mic.outbox.opentelemetry;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.DispatchDecorator;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Runs every publication in a {@code PRODUCER} span; {@link OutboxTracing#wrap(DispatchFn)} wraps a publisher
 * with it.
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
 *
 * <p>A batch publisher still gets whole batches, through its channel too, so that tracing keeps a worker's
 * batches overlapping. Each event of a batch gets its own span, which lasts as long as the batch: the spans of
 * one batch start together and end when its outcomes are in.
 */
final class TracingDecorator implements DispatchDecorator {
  private final OutboxTracing tracing;

  TracingDecorator(OutboxTracing tracing) {
    this.tracing = tracing;
  }

  @Override
  public void dispatch(OutboxEvent event, DispatchFn next) throws Exception {
    Span span = start(event);
    try (Scope ignored = span.makeCurrent()) {
      next.dispatch(carrying(event, span));
    } catch (Exception | Error e) {
      failed(span, e);
      throw e;
    } finally {
      span.end();
    }
  }

  /**
   * Starts the span of each event and sends those whose span started through {@code next}; an event whose span
   * cannot start (the destination function fails for it) fails alone, unsent. The spans end with the outcomes.
   */
  @Override
  public BatchChannel.Sent send(List<OutboxEvent> events, BatchChannel next) throws Exception {
    Map<UUID, Exception> failures = new LinkedHashMap<>();
    List<Span> spans = new ArrayList<>(events.size());
    List<OutboxEvent> sent = new ArrayList<>(events.size());
    for (OutboxEvent event : events) {
      Span span;
      try {
        span = start(event);
      } catch (RuntimeException e) {
        failures.put(event.id(), e);
        continue;
      }
      spans.add(span);
      sent.add(carrying(event, span));
    }
    if (sent.isEmpty()) {
      return () -> failures;
    }
    BatchChannel.Sent pending;
    try {
      pending = next.send(sent);
    } catch (Exception | Error e) {
      spans.forEach(span -> end(span, e));
      throw e;
    }
    return () -> {
      Map<UUID, Exception> published;
      try {
        published = pending.outcomes();
      } catch (Exception | Error e) {
        spans.forEach(span -> end(span, e));
        throw e;
      }
      for (int i = 0; i < sent.size(); i++) {
        end(spans.get(i), published.get(sent.get(i).id()));
      }
      failures.putAll(published);
      return failures;
    };
  }

  private Span start(OutboxEvent event) {
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
  private static OutboxEvent carrying(OutboxEvent event, Span span) {
    String traceParent = OutboxTracing.traceParentOf(span.getSpanContext());
    return traceParent == null || traceParent.equals(event.traceParent())
        ? event
        : event.toStored().traceParent(traceParent).build();
  }

  private static void failed(Span span, Throwable error) {
    span.setStatus(StatusCode.ERROR);
    span.setAttribute(MessagingAttributes.ERROR_TYPE, error.getClass().getName());
    span.recordException(error);
  }

  private static void end(Span span, Throwable error) {
    if (error != null) {
      failed(span, error);
    }
    span.end();
  }
}
