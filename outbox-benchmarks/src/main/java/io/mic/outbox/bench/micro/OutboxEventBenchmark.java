package io.mic.outbox.bench.micro;

import io.mic.outbox.OutboxEvent;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Building an {@link OutboxEvent}: every append pays it once per event, in the caller's thread. The builder
 * validates the aggregate, the topic, the headers and parses the payload as JSON. Baseline: building the
 * same event with a payload of {@code {}}, where the JSON check costs almost nothing.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class OutboxEventBenchmark {
  /** About 200 bytes, nested, with non-ASCII text: what a typical order event carries. */
  static final String PAYLOAD = "{\"orderId\":42,\"customer\":\"Zoë Müller\",\"lines\":[{\"sku\":\"A-1\",\"qty\":2,"
      + "\"price\":19.90},{\"sku\":\"B-7\",\"qty\":1,\"price\":5.00}],\"note\":\"deliver after 18:00, ring twice\"}";
  /** About 4 KB: an event that carries a whole document. */
  static final String LARGE_PAYLOAD = largePayload();

  private final UUID id = UUID.randomUUID();

  @Benchmark
  public OutboxEvent emptyPayload() {
    return OutboxEvent.builder().aggregate("order", "42").topic("order.created").payload("{}").build();
  }

  @Benchmark
  public OutboxEvent typicalEvent() {
    return OutboxEvent.builder().aggregate("order", "42").topic("order.created").payload(PAYLOAD)
        .header("tenant", "acme").header("source", "checkout").build();
  }

  @Benchmark
  public OutboxEvent typicalEventWithGivenId() {
    return OutboxEvent.builder().id(id).aggregate("order", "42").topic("order.created").payload(PAYLOAD)
        .header("tenant", "acme").header("source", "checkout").build();
  }

  @Benchmark
  public OutboxEvent largePayload4k() {
    return OutboxEvent.builder().aggregate("order", "42").topic("order.created").payload(LARGE_PAYLOAD).build();
  }

  private static String largePayload() {
    StringBuilder b = new StringBuilder("{\"orderId\":42,\"lines\":[");
    for (int i = 0; b.length() < 4_000; i++) {
      b.append(i == 0 ? "" : ",").append("{\"sku\":\"SKU-").append(i).append("\",\"qty\":").append(i % 7 + 1)
          .append(",\"price\":").append(i).append(".95,\"label\":\"line ").append(i).append("\"}");
    }
    return b.append("]}").toString();
  }
}
