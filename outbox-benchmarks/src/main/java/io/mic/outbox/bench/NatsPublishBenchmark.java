package io.mic.outbox.bench;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * Publish rates against a real JetStream server, all in one run and on one stream so they compare:
 * the raw client (async with the same ack window, and sync) against {@link NatsJetStreamPublisher}
 * (dispatchBatch in batches of 500, and dispatch one by one). Writes a Markdown report; asserts nothing.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.NatsPublishBenchmark \
 *      [--nats nats://127.0.0.1:4222] [--out bench-results/nats-publish.md]
 * </pre>
 */
public final class NatsPublishBenchmark {
  private static final int WINDOW = NatsJetStreamPublisher.DEFAULT_MAX_PENDING_ACKS;
  private static final int BATCH = 500;
  private static final int ASYNC_COUNT = 50_000;
  private static final int SYNC_COUNT = 5_000;
  private static final int ROUNDS = 4;

  private NatsPublishBenchmark() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = BenchSupport.parse(args);
    String url = options.getOrDefault("nats", "nats://127.0.0.1:4222");
    Path report = Path.of(options.getOrDefault("out", "bench-results/nats-publish.md"));
    String loadBefore = BenchSupport.loadAverage();
    String stream = "bench" + Long.toHexString(System.nanoTime());
    List<String> lines = new ArrayList<>();
    try (Connection nats = BenchSupport.nats(url, "mic-outbox-bench")) {
      JetStreamManagement jsm = nats.jetStreamManagement();
      jsm.addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>")
          .storageType(StorageType.File).build());
      try {
        NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).build();
        JetStream js = nats.jetStream();
        // warm-up: JIT and the stream's first blocks, not measured
        rawAsync(js, events(stream, 10_000));
        batches(publisher, events(stream, 10_000));

        // rounds alternate which side goes first, so neither gains from a warmer stream or disk
        long rawNanos = 0;
        long batchNanos = 0;
        for (int round = 0; round < ROUNDS; round++) {
          List<OutboxEvent> forRaw = events(stream, ASYNC_COUNT);
          List<OutboxEvent> forBatch = events(stream, ASYNC_COUNT);
          if (round % 2 == 0) {
            rawNanos += nanos(() -> rawAsync(js, forRaw));
            batchNanos += nanos(() -> batches(publisher, forBatch));
          } else {
            batchNanos += nanos(() -> batches(publisher, forBatch));
            rawNanos += nanos(() -> rawAsync(js, forRaw));
          }
        }
        double rawAsync = ROUNDS * ASYNC_COUNT / (rawNanos / 1e9);
        double batch = ROUNDS * ASYNC_COUNT / (batchNanos / 1e9);
        List<OutboxEvent> forSync = events(stream, SYNC_COUNT);
        List<OutboxEvent> forDispatch = events(stream, SYNC_COUNT);
        double rawSync = SYNC_COUNT / (nanos(() -> rawSync(js, forSync)) / 1e9);
        double sequential = SYNC_COUNT / (nanos(() -> {
          for (OutboxEvent e : forDispatch) {
            publisher.dispatch(e);
          }
        }) / 1e9);
        lines.add("# JetStream publish rates");
        lines.add("");
        lines.add("Run " + Instant.now() + ", " + Runtime.getRuntime().availableProcessors() + " cores, load average "
            + loadBefore + " before / " + BenchSupport.loadAverage() + " after; file stream, ~200-byte payload + headers,"
            + " window " + WINDOW + ", batch " + BATCH + ".");
        lines.add("");
        lines.add("| path | msg/s | messages |");
        lines.add("|---|---:|---:|");
        lines.add(String.format("| raw client publishAsync, window %d (baseline) | %,.0f | %d x %,d |", WINDOW, rawAsync,
            ROUNDS, ASYNC_COUNT));
        lines.add(String.format("| NatsJetStreamPublisher.dispatchBatch | %,.0f | %d x %,d |", batch, ROUNDS, ASYNC_COUNT));
        lines.add(String.format("| raw client publish, sync, one by one (baseline) | %,.0f | %,d |", rawSync, SYNC_COUNT));
        lines.add(String.format("| NatsJetStreamPublisher.dispatch, one by one | %,.0f | %,d |", sequential, SYNC_COUNT));
        lines.add("");
        lines.add(String.format("dispatchBatch / raw async = **%.2f**; dispatch / raw sync = **%.2f**;"
            + " dispatchBatch / dispatch = %.1fx", batch / rawAsync, sequential / rawSync, batch / sequential));
      } finally {
        jsm.deleteStream(stream);
      }
    }
    String md = String.join("\n", lines) + "\n";
    System.out.print(md);
    BenchSupport.write(report, md);
  }

  private interface Run {
    void run() throws Exception;
  }

  private static long nanos(Run run) throws Exception {
    long start = System.nanoTime();
    run.run();
    return System.nanoTime() - start;
  }

  private static List<OutboxEvent> events(String stream, int count) {
    List<OutboxEvent> events = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      events.add(OutboxEvent.builder().aggregate("order", String.valueOf(i)).topic(stream + ".order.created")
          .payload("{\"orderId\":" + i + ",\"customer\":\"Zoë Müller\",\"lines\":[{\"sku\":\"A-1\",\"qty\":2,"
              + "\"price\":19.90}],\"note\":\"benchmark record with a payload of about two hundred bytes....\"}")
          .header("tenant", "acme").build());
    }
    return events;
  }

  private static void batches(NatsJetStreamPublisher publisher, List<OutboxEvent> events) throws Exception {
    for (int from = 0; from < events.size(); from += BATCH) {
      Map<UUID, Exception> failures = publisher.dispatchBatch(events.subList(from, Math.min(events.size(), from + BATCH)));
      if (!failures.isEmpty()) {
        throw new IllegalStateException(failures.size() + " failures, e.g. " + failures.values().iterator().next());
      }
    }
  }

  /** The same messages (subject, headers, Nats-Msg-Id) through the raw client, with the same window. */
  private static void rawAsync(JetStream js, List<OutboxEvent> events) throws Exception {
    ArrayDeque<CompletableFuture<PublishAck>> window = new ArrayDeque<>();
    for (int from = 0; from < events.size(); from += BATCH) {
      for (OutboxEvent e : events.subList(from, Math.min(events.size(), from + BATCH))) {
        if (window.size() >= WINDOW) {
          window.poll().get();
        }
        window.add(js.publishAsync(e.topic(), headers(e), e.payload().getBytes(StandardCharsets.UTF_8),
            PublishOptions.builder().messageId(e.id().toString()).build()));
      }
      while (!window.isEmpty()) {
        window.poll().get(); // a dispatcher batch ends when all its acks are in
      }
    }
  }

  private static void rawSync(JetStream js, List<OutboxEvent> events) throws Exception {
    for (OutboxEvent e : events) {
      js.publish(e.topic(), headers(e), e.payload().getBytes(StandardCharsets.UTF_8),
          PublishOptions.builder().messageId(e.id().toString()).build());
    }
  }

  private static Headers headers(OutboxEvent e) {
    Headers h = new Headers();
    e.headers().forEach(h::put);
    return h.put("x-event-id", e.id().toString()).put("x-aggregate-type", e.aggregateType())
        .put("x-aggregate-id", e.aggregateId());
  }
}
