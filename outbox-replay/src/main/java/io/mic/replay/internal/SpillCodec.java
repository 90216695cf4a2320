package io.mic.replay.internal;

import io.mic.outbox.archive.JsonText;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.mic.outbox.archive.ArchivedEvent;
import java.io.IOException;
import java.io.Writer;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The line format of sorted runs: one compact JSON object per line, the time as two numbers (cheaper to
 * parse back than ISO text) and the payload last, so a reader can cut it out of the line verbatim instead
 * of parsing and re-serialising it a second time.
 */
final class SpillCodec {
  private SpillCodec() {}

  static void write(ArchivedEvent e, Writer out) throws IOException {
    try (JsonGenerator g = JsonText.FACTORY.createGenerator(out)) {
      g.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
      g.writeStartObject();
      g.writeNumberField("s", e.createdAt().getEpochSecond());
      g.writeNumberField("n", e.createdAt().getNano());
      g.writeStringField("id", e.id());
      g.writeStringField("topic", e.topic());
      if (e.aggregateType() != null) {
        g.writeStringField("aggregate_type", e.aggregateType());
      }
      if (e.aggregateId() != null) {
        g.writeStringField("aggregate_id", e.aggregateId());
      }
      ArchivedEvent.Envelope v = e.envelope();
      if (v.sequence() != null) {
        g.writeNumberField("sequence", v.sequence());
      }
      if (v.schemaVersion() != null) {
        g.writeNumberField("schema_version", v.schemaVersion());
      }
      if (v.occurredAt() != null) {
        g.writeNumberField("os", v.occurredAt().getEpochSecond());
        g.writeNumberField("on", v.occurredAt().getNano());
      }
      if (v.traceParent() != null) {
        g.writeStringField("trace_parent", v.traceParent());
      }
      if (!e.headers().isEmpty()) {
        g.writeObjectFieldStart("headers");
        for (Map.Entry<String, String> h : e.headers().entrySet()) {
          g.writeStringField(h.getKey(), h.getValue());
        }
        g.writeEndObject();
      }
      g.writeFieldName("payload");
      g.writeRawValue(e.payload()); // compact JSON already, with no raw line break
      g.writeEndObject();
    }
    out.write('\n');
  }

  static ArchivedEvent read(String line) throws IOException {
    try (JsonParser p = JsonText.FACTORY.createParser(line)) {
      p.nextToken();
      long seconds = 0;
      int nanos = 0;
      String id = null;
      String topic = null;
      String aggregateType = null;
      String aggregateId = null;
      Map<String, String> headers = null;
      Long sequence = null;
      Integer schemaVersion = null;
      Long occurredSeconds = null;
      int occurredNanos = 0;
      String traceParent = null;
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        p.nextToken();
        switch (field) {
          case "s" -> seconds = p.getLongValue();
          case "n" -> nanos = p.getIntValue();
          case "id" -> id = p.getText();
          case "topic" -> topic = p.getText();
          case "aggregate_type" -> aggregateType = p.getText();
          case "aggregate_id" -> aggregateId = p.getText();
          case "sequence" -> sequence = p.getLongValue();
          case "schema_version" -> schemaVersion = p.getIntValue();
          case "os" -> occurredSeconds = p.getLongValue();
          case "on" -> occurredNanos = p.getIntValue();
          case "trace_parent" -> traceParent = p.getText();
          case "headers" -> {
            headers = new LinkedHashMap<>();
            while (p.nextToken() == JsonToken.FIELD_NAME) {
              String name = p.currentName();
              p.nextToken();
              headers.put(name, p.getText());
            }
          }
          case "payload" -> {
            int start = (int) p.currentTokenLocation().getCharOffset();
            String payload = line.substring(start, line.length() - 1);
            return new ArchivedEvent(id, topic, aggregateType, aggregateId, Instant.ofEpochSecond(seconds, nanos),
                payload, headers, new ArchivedEvent.Envelope(sequence, schemaVersion,
                    occurredSeconds == null ? null : Instant.ofEpochSecond(occurredSeconds, occurredNanos),
                    traceParent));
          }
          default -> throw new IOException("unexpected field '" + field + "' in a sorted run");
        }
      }
      throw new IOException("a line of a sorted run has no payload");
    }
  }
}
