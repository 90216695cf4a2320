package io.mic.outbox.archive;

import com.fasterxml.jackson.core.JsonGenerator;
import io.mic.outbox.OutboxEvent;
import java.io.IOException;
import java.io.StringWriter;
import java.time.Instant;
import java.util.Map;
import java.util.Set;

/**
 * Writes outbox events as archive records, in the format {@code mic-events-replay} reads (CONTRACT section
 * 7); {@link RecordParser} reads them back. The replay writes its sorted runs (temporary files) with
 * {@link #writeJsonRecord(JsonGenerator, ArchivedEvent)} in the same format: one codec.
 *
 * <pre>{@code
 * try (JsonGenerator g = JsonText.FACTORY.createGenerator(out)) {
 *   ArchiveRecords.writeJsonRecord(g, event);
 * }
 * }</pre>
 */
public final class ArchiveRecords {
  private ArchiveRecords() {}

  /**
   * One JSON archive record: {@code payload} as the JSON value, {@code headers} as an object. The generator
   * is left after the record's closing brace.
   */
  public static void writeJsonRecord(JsonGenerator g, OutboxEvent e) throws IOException {
    g.writeStartObject();
    writeCommon(g, e);
    g.writeStringField("created_at", Timestamps.format(e.createdAt()));
    writeEnvelope(g, e, true, null);
    g.writeFieldName("payload");
    g.writeRawValue(e.payload()); // validated JSON when the event was appended, read back from a JSON column
    g.writeFieldName("headers");
    writeHeaders(g, e.headers());
    g.writeEndObject();
  }

  /**
   * An archived event as a JSON archive record again, losing nothing {@link RecordParser#ARCHIVE} reads back
   * (the time keeps its nanoseconds; an absent aggregate or envelope field stays absent).
   */
  public static void writeJsonRecord(JsonGenerator g, ArchivedEvent e) throws IOException {
    g.writeStartObject();
    g.writeStringField("id", e.id());
    g.writeStringField("topic", e.topic());
    if (e.aggregateType() != null) {
      g.writeStringField("aggregate_type", e.aggregateType());
    }
    if (e.aggregateId() != null) {
      g.writeStringField("aggregate_id", e.aggregateId());
    }
    g.writeStringField("created_at", Timestamps.format(e.createdAt()));
    writeJsonEnvelope(g, e.envelope());
    g.writeFieldName("payload");
    g.writeRawValue(e.payload()); // compact JSON text, as the parser returned it
    g.writeFieldName("headers");
    writeHeaders(g, e.headers());
    g.writeEndObject();
  }

  /** The envelope's fields as a JSON record has them: those the event has, {@code occurred_at} as ISO text. */
  public static void writeJsonEnvelope(JsonGenerator g, ArchivedEvent.Envelope v) throws IOException {
    if (v.sequence() != null) {
      g.writeNumberField("sequence", v.sequence());
    }
    if (v.schemaVersion() != null) {
      g.writeNumberField("schema_version", v.schemaVersion());
    }
    if (v.occurredAt() != null) {
      g.writeStringField("occurred_at", Timestamps.format(v.occurredAt()));
    }
    if (v.traceParent() != null) {
      g.writeStringField("trace_parent", v.traceParent());
    }
  }

  /**
   * One ClickHouse {@code JSONEachRow} row: {@code payload} and {@code headers} as JSON text;
   * {@code created_at} as Unix seconds for a {@code DateTime} column (time-zone independent, sub-second part
   * dropped) or as UTC text with microseconds for a {@code DateTime64} column. Of the envelope's columns only
   * those the table has ({@code envelope}) are written: a table made before them takes the rows without.
   */
  public static void writeClickHouseRow(JsonGenerator g, OutboxEvent e, boolean dateTime64, Set<String> envelope)
      throws IOException {
    g.writeStartObject();
    writeCommon(g, e);
    if (dateTime64) {
      g.writeStringField("created_at", Timestamps.clickHouseText(e.createdAt()));
    } else {
      g.writeNumberField("created_at", e.createdAt().getEpochSecond());
    }
    writeEnvelope(g, e, dateTime64, envelope);
    g.writeStringField("payload", e.payload());
    g.writeStringField("headers", headersText(e.headers()));
    g.writeEndObject();
  }

  /**
   * The envelope's fields: in JSON records ({@code columns == null}) {@code occurred_at} as ISO text and
   * each field only when the event has it; in ClickHouse rows those of {@code columns}.
   */
  private static void writeEnvelope(JsonGenerator g, OutboxEvent e, boolean dateTime64, Set<String> columns)
      throws IOException {
    boolean json = columns == null;
    if (e.sequence() > 0 && (json || columns.contains("sequence"))) {
      g.writeNumberField("sequence", e.sequence());
    }
    if (json || columns.contains("schema_version")) {
      g.writeNumberField("schema_version", e.schemaVersion());
    }
    Instant occurred = e.occurredAt();
    if (occurred != null && (json || columns.contains("occurred_at"))) {
      if (json) {
        g.writeStringField("occurred_at", Timestamps.format(occurred));
      } else if (dateTime64) {
        g.writeStringField("occurred_at", Timestamps.clickHouseText(occurred));
      } else {
        g.writeNumberField("occurred_at", occurred.getEpochSecond());
      }
    }
    if (e.traceParent() != null && (json || columns.contains("trace_parent"))) {
      g.writeStringField("trace_parent", e.traceParent());
    }
  }

  private static void writeCommon(JsonGenerator g, OutboxEvent e) throws IOException {
    g.writeStringField("id", e.id().toString());
    g.writeStringField("topic", e.topic());
    g.writeStringField("aggregate_type", e.aggregateType());
    g.writeStringField("aggregate_id", e.aggregateId());
  }

  private static void writeHeaders(JsonGenerator g, Map<String, String> headers) throws IOException {
    g.writeStartObject();
    if (headers != null) {
      for (Map.Entry<String, String> h : headers.entrySet()) {
        g.writeStringField(h.getKey(), h.getValue());
      }
    }
    g.writeEndObject();
  }

  public static String headersText(Map<String, String> headers) throws IOException {
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JsonText.FACTORY.createGenerator(out)) {
      writeHeaders(g, headers);
    }
    return out.toString();
  }
}
