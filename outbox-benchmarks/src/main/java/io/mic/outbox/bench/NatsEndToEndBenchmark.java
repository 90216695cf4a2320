package io.mic.outbox.bench;

import java.util.ArrayList;
import java.util.List;

/**
 * The NATS JetStream scenario of {@link EndToEndBenchmark} under its earlier name: the same options, the
 * report in {@code bench-results/nats-end-to-end.md} unless {@code --out} says otherwise.
 */
public final class NatsEndToEndBenchmark {
  private NatsEndToEndBenchmark() {}

  public static void main(String[] args) throws Exception {
    List<String> all = new ArrayList<>(List.of("--broker", "nats", "--out", "bench-results/nats-end-to-end.md"));
    all.addAll(List.of(args)); // a later --out wins
    EndToEndBenchmark.main(all.toArray(String[]::new));
  }
}
