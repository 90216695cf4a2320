package io.mic.outbox.bench.micro;

import io.mic.outbox.jdbc.internal.HeadersJson;
import java.util.LinkedHashMap;
import java.util.Map;
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
 * The headers column: every append encodes an event's headers to JSON, every claim decodes them back.
 * Three headers as most events carry (tenant, trace context, source), and ten with characters to escape.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 2, time = 1)
@Measurement(iterations = 3, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class HeadersJsonBenchmark {
  private final Map<String, String> three = new LinkedHashMap<>();
  private final Map<String, String> ten = new LinkedHashMap<>();
  private String threeJson;
  private String tenJson;

  public HeadersJsonBenchmark() {
    three.put("tenant", "acme");
    three.put("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    three.put("source", "checkout");
    for (int i = 0; i < 10; i++) {
      ten.put("x-header-" + i, "value \"" + i + "\" with a tab\tand Zoë");
    }
    threeJson = HeadersJson.write(three);
    tenJson = HeadersJson.write(ten);
  }

  @Benchmark
  public String writeThree() {
    return HeadersJson.write(three);
  }

  @Benchmark
  public Map<String, String> readThree() {
    return HeadersJson.read(threeJson);
  }

  @Benchmark
  public String writeTenEscaped() {
    return HeadersJson.write(ten);
  }

  @Benchmark
  public Map<String, String> readTenEscaped() {
    return HeadersJson.read(tenJson);
  }
}
