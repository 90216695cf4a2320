package io.mic.replay;

import com.fasterxml.jackson.core.JsonGenerator;
import io.mic.outbox.archive.ArchiveRecords;
import io.mic.outbox.archive.ArchivedEvent;
import io.mic.outbox.archive.JsonText;
import io.mic.outbox.archive.Timestamps;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.util.List;

/**
 * The dry run: publishes nothing and writes one JSON line per selected event, in replay order, with
 * {@code original_id}, {@code topic}, {@code created_at} (UTC), {@code aggregate_type}, {@code aggregate_id}, the
 * envelope fields the archive has, {@code batch_id} and {@code payload_bytes}: the same for every broker, since
 * a dry run has none (NATS's {@code Nats-Msg-Id} is {@code <original_id>:replay:<batch_id>}).
 *
 * <pre>{@code
 * Writer out = new OutputStreamWriter(System.out, StandardCharsets.UTF_8);
 * ReplaySink sink = new DryRunSink(out);
 * }</pre>
 *
 * <p>The writer is flushed after each chunk, never closed.
 */
public final class DryRunSink implements ReplaySink {
  private final JsonGenerator json;

  public DryRunSink(Writer out) {
    try {
      this.json = JsonText.FACTORY.createGenerator(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    json.disable(JsonGenerator.Feature.AUTO_CLOSE_TARGET);
    json.setRootValueSeparator(null); // lines are separated by '\n' below, not by Jackson's default space
  }

  @Override
  public void publish(List<ReplayMessage> messages) {
    try {
      for (ReplayMessage m : messages) {
        ArchivedEvent e = m.event();
        json.writeStartObject();
        json.writeStringField("original_id", e.id());
        json.writeStringField("topic", e.topic());
        json.writeStringField("created_at", Timestamps.format(e.createdAt()));
        json.writeStringField("aggregate_type", e.aggregateType());
        json.writeStringField("aggregate_id", e.aggregateId());
        ArchiveRecords.writeJsonEnvelope(json, e.envelope());
        json.writeStringField("batch_id", m.batchId());
        json.writeNumberField("payload_bytes", m.payloadBytes().length);
        json.writeEndObject();
        json.writeRaw('\n');
      }
      json.flush(); // a chunk is complete on the writer when publish returns, as with a real sink
    } catch (IOException e) {
      throw new ReplaySinkException(0, 0, "cannot write the dry run: " + e.getMessage(), e);
    }
  }

  @Override
  public boolean isDryRun() {
    return true;
  }

  @Override
  public void close() {
    try {
      json.close(); // writes what is buffered; the target stays open
      Object target = json.getOutputTarget();
      if (target instanceof Writer w) {
        w.flush();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
