package io.mic.outbox.opentelemetry;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.util.List;

/** A real OpenTelemetry SDK that keeps every ended span in memory, one per test. */
final class TracingSdk implements AutoCloseable {
  final InMemorySpanExporter exporter = InMemorySpanExporter.create();
  private final SdkTracerProvider provider = SdkTracerProvider.builder()
      .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build();
  final OpenTelemetry openTelemetry = OpenTelemetrySdk.builder().setTracerProvider(provider).build();

  List<SpanData> spans() {
    return exporter.getFinishedSpanItems();
  }

  SpanData span(String name) {
    List<SpanData> named = spans().stream().filter(s -> s.getName().equals(name)).toList();
    if (named.size() != 1) {
      throw new AssertionError("expected one span named '" + name + "', found " + spans());
    }
    return named.get(0);
  }

  @Override
  public void close() {
    provider.close();
  }
}
