package io.mic.outbox.opentelemetry;

import io.mic.outbox.BatchChannel;
import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.OutboxEvent;
import io.opentelemetry.api.trace.Span;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The batch form of {@link TracingDispatchFn}: the wrapped publisher still gets whole batches, and each
 * event of a batch still gets its own {@code PRODUCER} span (child of its own appending context), which
 * lasts as long as the batch: the spans of one batch start and end together. Through the wrapped
 * publisher's channel too ({@link #channel()}), so that tracing keeps its batches overlapping.
 */
final class TracingBatchDispatchFn extends TracingDispatchFn implements BatchDispatchFn {
  private final BatchDispatchFn delegate;

  TracingBatchDispatchFn(OutboxTracing tracing, BatchDispatchFn delegate) {
    super(tracing, delegate);
    this.delegate = delegate;
  }

  /**
   * An event whose span cannot start (the destination function fails for it) fails alone, unsent: the rest
   * of the batch is still published.
   */
  @Override
  public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws Exception {
    return traced(events, sent -> {
      Map<UUID, Exception> published = delegate.dispatchBatch(sent);
      return () -> published;
    }).outcomes();
  }

  /** The wrapped publisher's channel, traced: a batch's spans end when its outcomes are in. */
  @Override
  public BatchChannel channel() {
    BatchChannel channel = delegate.channel();
    return BatchChannel.forwarding(channel, events -> traced(events, channel));
  }

  /** Starts the span of each event, sends those whose span started through {@code channel}, ends them with the outcomes. */
  private BatchChannel.Sent traced(List<OutboxEvent> events, BatchChannel channel) throws Exception {
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
      pending = channel.send(sent);
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

  private static void end(Span span, Throwable error) {
    if (error != null) {
      failed(span, error);
    }
    span.end();
  }
}
