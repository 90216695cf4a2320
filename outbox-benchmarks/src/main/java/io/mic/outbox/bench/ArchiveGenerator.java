package io.mic.outbox.bench;

import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.SplittableRandom;
import java.util.UUID;

/**
 * Writes a JSON Lines archive for benchmarks: {@code count} records in random time order over one day,
 * half of them on topic {@code order.created}, about 300 bytes each.
 *
 * <pre>
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.ArchiveGenerator /tmp/archive.jsonl 5000000
 * </pre>
 */
public final class ArchiveGenerator {
  static final Instant DAY = Instant.parse("2026-09-29T00:00:00Z");

  private ArchiveGenerator() {}

  public static void main(String[] args) throws IOException {
    write(Path.of(args[0]), Long.parseLong(args[1]));
  }

  static void write(Path file, long count) throws IOException {
    SplittableRandom random = new SplittableRandom(42);
    try (BufferedWriter out = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
      for (long i = 0; i < count; i++) {
        Instant createdAt = DAY.plusMillis(random.nextLong(86_400_000L));
        String topic = random.nextBoolean() ? "order.created" : "order.shipped";
        UUID id = new UUID(random.nextLong(), random.nextLong());
        out.write("{\"id\":\"" + id + "\",\"topic\":\"" + topic + "\",\"aggregate_type\":\"order\","
            + "\"aggregate_id\":\"" + random.nextInt(1_000_000) + "\",\"created_at\":\"" + createdAt + "\","
            + "\"payload\":{\"orderId\":" + i + ",\"customer\":\"Zoë Müller\",\"lines\":[{\"sku\":\"A-"
            + random.nextInt(10_000) + "\",\"qty\":" + (1 + random.nextInt(9)) + ",\"price\":19.90}],"
            + "\"note\":\"benchmark record\"},\"headers\":{\"tenant\":\"acme\",\"traceparent\":\"00-"
            + Long.toHexString(random.nextLong()) + "-01\"}}\n");
      }
    }
  }
}
