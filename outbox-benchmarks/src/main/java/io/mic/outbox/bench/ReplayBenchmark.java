package io.mic.outbox.bench;

import io.mic.outbox.archive.ArchivedEvent;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.replay.DryRunSink;
import io.mic.replay.EventReplay;
import io.mic.replay.JsonArchiveSource;
import io.mic.replay.PublisherSink;
import io.mic.replay.ReplayCursor;
import io.mic.replay.ReplayMessage;
import io.mic.replay.ReplaySink;
import io.mic.replay.ReplayProgress;
import io.mic.replay.ReplayQuery;
import io.mic.replay.ReplayResult;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Replay figures in one run: the dry-run rate of a JSON archive (and the peak heap it took), then the
 * rate of a replay to JetStream against the raw client publishing the same messages with the same window.
 * Writes a Markdown report; asserts nothing. Without {@code --archive} it generates one of
 * {@code --records} records (default 200,000, {@link ArchiveGenerator}) in the temporary directory first.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -Xmx512m -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.ReplayBenchmark \
 *      [--archive /tmp/archive-1m.jsonl | --records 200000] [--nats nats://127.0.0.1:4222]
 *      [--out bench-results/replay.md]
 * </pre>
 */
public final class ReplayBenchmark {
  private static final Instant FROM = Instant.parse("2026-09-29T00:00:00Z");
  private static final Instant TO = Instant.parse("2026-09-29T23:59:59.999Z");
  private static final int PUBLISH_COUNT = 100_000;

  private ReplayBenchmark() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> options = BenchSupport.parse(args);
    String url = options.getOrDefault("nats", "nats://127.0.0.1:4222");
    Path report = Path.of(options.getOrDefault("out", "bench-results/replay.md"));
    Path archive;
    Path generated = null;
    if (options.containsKey("archive")) {
      archive = Path.of(options.get("archive"));
    } else {
      generated = Files.createTempFile("mic-replay-bench", ".jsonl");
      ArchiveGenerator.write(generated, Long.parseLong(options.getOrDefault("records", "200000")));
      archive = generated;
    }
    try {
      run(archive, url, report);
    } finally {
      if (generated != null) {
        Files.deleteIfExists(generated);
      }
    }
  }

  private static void run(Path archive, String url, Path report) throws Exception {
    List<String> lines = new ArrayList<>();
    lines.add("# Replay");
    lines.add("");
    lines.add("Run " + Instant.now() + ", " + Runtime.getRuntime().availableProcessors() + " cores, load average "
        + BenchSupport.loadAverage() + " at the start, -Xmx" + (Runtime.getRuntime().maxMemory() >> 20) + "m, archive "
        + archive + " (" + (Files.size(archive) >> 20) + " MiB).");
    lines.add("");
    resetPeaks();
    ReplayResult dry = EventReplay.builder().source(JsonArchiveSource.of(archive)).topic("order.created")
        .from(FROM).to(TO).sink(new DryRunSink(Writer.nullWriter())).batchId("bench").build().run();
    lines.add(String.format("- dry run: %,d records read, %,d selected, %.1f s: %,.0f records/s read, %,.0f events/s"
        + " replayed; peak heap %d MiB", dry.recordsRead(), dry.published(), dry.elapsed().toNanos() / 1e9,
        dry.recordsRead() / (dry.elapsed().toNanos() / 1e9), dry.rate(), peakHeapMiB()));

    List<ReplayMessage> messages = firstMessages(archive, PUBLISH_COUNT);
    try (Connection nats = BenchSupport.nats(url, "mic-outbox-bench")) {
      String stream = "bench" + Long.toHexString(System.nanoTime());
      nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects("order.created")
          .build());
      try {
        long rawNanos = 0;
        long sinkNanos = 0;
        for (int round = 0; round < 2; round++) {
          // alternate the order; new batch ids so no publication is dropped as a duplicate
          String suffix = "-" + round;
          if (round % 2 == 0) {
            rawNanos += rawPublish(nats.jetStream(), messages, suffix + "raw");
            sinkNanos += sinkPublish(nats, stream, messages, suffix + "sink");
          } else {
            sinkNanos += sinkPublish(nats, stream, messages, suffix + "sink");
            rawNanos += rawPublish(nats.jetStream(), messages, suffix + "raw");
          }
        }
        double raw = 2.0 * messages.size() / (rawNanos / 1e9);
        double sink = 2.0 * messages.size() / (sinkNanos / 1e9);
        lines.add(String.format("- publish to JetStream, 2 x %,d messages, window %d: raw client %,.0f msg/s,"
            + " PublisherSink %,.0f msg/s, ratio **%.2f**", messages.size(), NatsJetStreamPublisher.DEFAULT_MAX_PENDING_ACKS,
            raw, sink, sink / raw));
      } finally {
        nats.jetStreamManagement().deleteStream(stream);
      }
    }
    lines.add("- load average at the end: " + BenchSupport.loadAverage());
    String md = String.join("\n", lines) + "\n";
    System.out.print(md);
    BenchSupport.write(report, md);
  }

  private static List<ReplayMessage> firstMessages(Path archive, int count) {
    List<ReplayMessage> messages = new ArrayList<>(count);
    try (ReplayCursor cursor = JsonArchiveSource.of(archive).open(new ReplayQuery("order.created", FROM, TO),
        ReplayProgress.NONE)) {
      for (ArchivedEvent e = cursor.next(); e != null && messages.size() < count; e = cursor.next()) {
        messages.add(ReplayMessage.of(e, "bench"));
      }
    }
    return messages;
  }

  private static long sinkPublish(Connection nats, String stream, List<ReplayMessage> messages, String batch)
      throws Exception {
    List<ReplayMessage> renamed = messages.stream().map(m -> ReplayMessage.of(m.event(), batch)).toList();
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).expectedStream(stream)
        .build()) {
      ReplaySink sink = PublisherSink.of(publisher);
      long start = System.nanoTime();
      sink.prepare(new ReplayQuery("order.created", FROM, TO));
      for (int from = 0; from < renamed.size(); from += EventReplay.CHUNK_SIZE) {
        sink.publish(renamed.subList(from, Math.min(renamed.size(), from + EventReplay.CHUNK_SIZE)));
      }
      return System.nanoTime() - start;
    }
  }

  /** The same subject, headers, payload and message id through the raw client, one window, no chunks. */
  private static long rawPublish(JetStream js, List<ReplayMessage> messages, String batch) throws Exception {
    long start = System.nanoTime();
    ArrayDeque<CompletableFuture<PublishAck>> window = new ArrayDeque<>();
    for (ReplayMessage m : messages) {
      if (window.size() >= NatsJetStreamPublisher.DEFAULT_MAX_PENDING_ACKS) {
        window.poll().get();
      }
      Headers headers = new Headers();
      m.headers().forEach(headers::put);
      headers.put("x-replay-batch-id", batch);
      window.add(js.publishAsync(m.subject(), headers, m.payloadBytes(),
          PublishOptions.builder().messageId(m.event().id() + ":replay:" + batch).build()));
    }
    while (!window.isEmpty()) {
      window.poll().get();
    }
    return System.nanoTime() - start;
  }

  private static void resetPeaks() {
    System.gc();
    ManagementFactory.getMemoryPoolMXBeans().forEach(MemoryPoolMXBean::resetPeakUsage);
  }

  private static long peakHeapMiB() {
    long peak = 0;
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      if (pool.getType() == MemoryType.HEAP) {
        peak += pool.getPeakUsage().getUsed();
      }
    }
    return peak >> 20;
  }
}
