package io.mic.outbox.archive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import io.mic.outbox.ArchiveException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The record formats: written, read back, and the ClickHouse rules both sides share. */
class ArchiveFormatTest {
  private static final Instant T0 = Instant.parse("2026-09-29T08:00:00.123456Z");


  private static OutboxEvent event(int i, Instant created) {
    return OutboxEvent.stored().id(UUID.nameUUIDFromBytes(("e" + i).getBytes(StandardCharsets.UTF_8)))
        .aggregate("order", "o-" + i).topic("order.created").payload("{\"n\":" + i + ",\"s\":\"é\\\"\"}")
        .headers(java.util.Map.of("tenant", "acme")).createdAt(created).status(OutboxStatus.DISPATCHED).dispatchedAt(created)
        .build();
  }

  @Test
  void timesAreUtcWithMillisOrMicros() {
    assertThat(Timestamps.format(Instant.parse("2026-09-29T08:00:00Z"))).isEqualTo("2026-09-29T08:00:00.000Z");
    assertThat(Timestamps.format(Instant.parse("2026-09-29T08:00:00.120Z"))).isEqualTo("2026-09-29T08:00:00.120Z");
    assertThat(Timestamps.format(T0)).isEqualTo("2026-09-29T08:00:00.123456Z");
    assertThat(Timestamps.clickHouseText(T0)).isEqualTo("2026-09-29 08:00:00.123456");
    assertThat(Timestamps.compact(T0)).isEqualTo("20260929T080000.123456Z");
  }

  @Test
  void jsonRecordCarriesThePayloadAsAJsonValue() throws IOException {
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JsonText.FACTORY.createGenerator(out)) {
      ArchiveRecords.writeJsonRecord(g, event(1, T0));
    }
    assertThat(out.toString()).isEqualTo("{\"id\":\"" + event(1, T0).id() + "\",\"topic\":\"order.created\","
        + "\"aggregate_type\":\"order\",\"aggregate_id\":\"o-1\",\"created_at\":\"2026-09-29T08:00:00.123456Z\","
        + "\"schema_version\":1,\"occurred_at\":\"2026-09-29T08:00:00.123456Z\","
        + "\"payload\":{\"n\":1,\"s\":\"é\\\"\"},\"headers\":{\"tenant\":\"acme\"}}");
  }

  @Test
  void clickHouseRowCarriesJsonText() throws IOException {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (JsonGenerator g = JsonText.FACTORY.createGenerator(out)) {
      ArchiveRecords.writeClickHouseRow(g, event(2, T0), false, java.util.Set.of());
    }
    String row = out.toString(StandardCharsets.UTF_8);
    assertThat(row).contains("\"created_at\":" + T0.getEpochSecond() + ",")
        .contains("\"payload\":\"{\\\"n\\\":2,\\\"s\\\":\\\"é\\\\\\\"\\\"}\"")
        .contains("\"headers\":\"{\\\"tenant\\\":\\\"acme\\\"}\"");
  }

  /** ClickHouse 18.16's answer to an insert whose row does not parse: it quotes the row, i.e. the payload. */
  @Test
  void aJsonRecordAndAClickHouseRowReadBackAsTheEventWritten() throws IOException {
    OutboxEvent e = event(3, T0);
    StringWriter json = new StringWriter();
    try (JsonGenerator g = JsonText.FACTORY.createGenerator(json)) {
      ArchiveRecords.writeJsonRecord(g, e);
    }
    ArchivedEvent fromJson = read(RecordParser.ARCHIVE, json.toString());
    assertThat(fromJson.id()).isEqualTo(e.id().toString());
    assertThat(fromJson.createdAt()).isEqualTo(T0);
    assertThat(fromJson.payload()).isEqualTo(e.payload());
    assertThat(fromJson.headers()).isEqualTo(Map.of("tenant", "acme"));
    assertThat(fromJson.envelope().schemaVersion()).isEqualTo(1);
    assertThat(fromJson.envelope().occurredAt()).isEqualTo(T0);

    // what the replay's SELECT returns for a DateTime64(6, 'UTC') row the archiver wrote
    String row = "{\"original_id\":\"" + e.id() + "\",\"topic\":\"order.created\",\"aggregate_type\":\"order\","
        + "\"aggregate_id\":\"o-3\",\"created_at_utc\":\"" + Timestamps.clickHouseText(T0) + "\","
        + "\"payload\":" + quoted(e.payload()) + ",\"headers\":" + quoted(ArchiveRecords.headersText(e.headers())) + "}";
    ArchivedEvent fromClickHouse = read(RecordParser.CLICKHOUSE, row);
    assertThat(fromClickHouse).isEqualTo(new ArchivedEvent(fromJson.id(), fromJson.topic(), "order", "o-3", T0,
        fromJson.payload(), fromJson.headers(), ArchivedEvent.Envelope.NONE));
  }

  private static ArchivedEvent read(RecordParser parser, String text) throws IOException {
    try (JsonParser p = JsonText.FACTORY.createParser(text)) {
      p.nextToken();
      return parser.read(p);
    } catch (RecordParser.BadRecordException bad) {
      throw new AssertionError(bad.getMessage(), bad);
    }
  }

  private static String quoted(String text) throws IOException {
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JsonText.FACTORY.createGenerator(out)) {
      g.writeString(text);
    }
    return out.toString();
  }

  @Test
  void aLineThatIsNotJsonIsNamedWithoutQuotingThePayload(@TempDir Path dir) throws IOException {
    Path file = dir.resolve("a.jsonl");
    Files.writeString(file, "{\"id\":\"e1\",\"topic\":\"t\",\"created_at\":\"2026-09-29T08:00:00Z\","
        + "\"payload\":{\"pin\":s3cretPin42}}\n", StandardCharsets.UTF_8);

    try (JsonArchiveReader reader = JsonArchiveReader.open(file, 1 << 20)) {
      assertThatThrownBy(() -> reader.next(null)).isInstanceOf(ArchiveException.class)
          .hasMessage(file + " line 1: not valid JSON: Unrecognized token (11 characters): was expecting (JSON String,"
              + " Number, Array, Object or token 'null', 'true' or 'false') (column 77)");
    }
  }

  @Test
  void clickHouseMajorVersions() {
    assertThat(ClickHouseWriter.majorVersion("18.16.1")).isEqualTo(18);
    assertThat(ClickHouseWriter.majorVersion("24.3.2.23")).isEqualTo(24);
  }

  @Test
  void theTextOfAFailedInsertIsLeftOutOfTheMessageBecauseItQuotesTheRows() {
    String answer = "Code: 27, e.displayText() = DB::Exception: Cannot parse input: expected , before:"
        + " {\"id\":\"x\",\"payload\":\"{\\\"name\\\":\\\"PII-MARKER\\\"}\"}: (at row 1)\n, e.what() = DB::Exception\n";

    assertThat(ClickHouseHttp.serverError(answer, true)).isEqualTo("ClickHouse error code 27 (its text is left"
        + " out: it quotes the rows)");
    assertThat(ClickHouseHttp.serverError("no code at all: PII-MARKER", true)).isEqualTo("no ClickHouse error"
        + " code (its text is left out: it may quote the rows)");
    assertThat(ClickHouseHttp.serverError("Code: 60, e.displayText() = DB::Exception: Table default.t doesn't"
        + " exist.\n", false)).isEqualTo("Code: 60, e.displayText() = DB::Exception: Table default.t doesn't exist.");
  }
}
