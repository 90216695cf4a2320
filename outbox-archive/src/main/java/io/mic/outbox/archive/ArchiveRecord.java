package io.mic.outbox.archive;

import java.time.Instant;
import java.util.Map;
import java.util.Objects;

/**
 * One record of an archive as the format holds it, whether it came from a JSON archive or a ClickHouse row
 * ({@link RecordParser}); the writer's side is {@link ArchiveRecords}.
 *
 * <pre>{@code
 * ArchiveRecord r = RecordParser.ARCHIVE.read(parser);   // parser on the record's '{'
 * r.id(); r.topic(); r.createdAt(); r.payload();          // payload: compact JSON text
 * }</pre>
 *
 * @param id the original event id
 * @param aggregateType {@code null} when the archive has none
 * @param aggregateId {@code null} when the archive has none
 * @param createdAt in UTC
 * @param payload the archived JSON value as compact JSON text
 * @param headers the original headers in archive order, {@code null} when the record has none
 * @param sequence {@code null} when absent (or 0: the store numbered none)
 * @param schemaVersion {@code null} when absent
 * @param occurredAt {@code null} when absent
 * @param traceParent {@code null} when absent or empty
 */
public record ArchiveRecord(String id, String topic, String aggregateType, String aggregateId, Instant createdAt,
    String payload, Map<String, String> headers, Long sequence, Integer schemaVersion, Instant occurredAt,
    String traceParent) {

  public ArchiveRecord {
    Objects.requireNonNull(id, "id");
    Objects.requireNonNull(topic, "topic");
    Objects.requireNonNull(createdAt, "createdAt");
    Objects.requireNonNull(payload, "payload");
  }

  /** Ids and time only: payloads may hold personal data and never reach logs. */
  @Override
  public String toString() {
    return "ArchiveRecord{id=" + id + ", topic=" + topic + ", createdAt=" + createdAt + "}";
  }
}
