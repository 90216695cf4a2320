package io.mic.outbox.archive;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Reads one archive record, a JSON object, into an {@link ArchivedEvent}. Unknown fields are ignored so
 * archives may carry more columns (status, attempts).
 *
 * <p>Two layouts: the JSON archive ({@code payload} and {@code headers} are JSON values) and ClickHouse
 * rows ({@code payload} and {@code headers} are JSON text in {@code String} columns; the id and the UTC
 * time come as {@code original_id} and {@code created_at_utc}, see {@code ClickHouseSql}).
 */
public final class RecordParser {
  public static final RecordParser ARCHIVE = new RecordParser(false);
  public static final RecordParser CLICKHOUSE = new RecordParser(true);

  private static final int MAX_ID_LENGTH = 1024;
  private static final Pattern HEADER_NAME = Pattern.compile("[!-9;-~]{1,256}");

  private final boolean clickHouse;
  private final String idField;
  private final String createdAtField;
  private final String occurredAtField;

  private RecordParser(boolean clickHouse) {
    this.clickHouse = clickHouse;
    this.idField = clickHouse ? "original_id" : "id";
    this.createdAtField = clickHouse ? "created_at_utc" : "created_at";
    this.occurredAtField = clickHouse ? "occurred_at_utc" : "occurred_at";
  }

  /** The caller adds where the record is. */
  public static final class BadRecordException extends Exception {
    private static final long serialVersionUID = 1L;

    BadRecordException(String message) {
      super(message);
    }
  }

  /** Reads the object the parser is positioned on (its {@code START_OBJECT}). */
  public ArchivedEvent read(JsonParser p) throws IOException, BadRecordException {
    return read(p, null);
  }

  /**
   * Like {@link #read(JsonParser)}, but returns {@code null} as soon as the record's topic is known to differ
   * from {@code topic}: the rest of such a record is only checked to be JSON (most archives put the topic
   * before the payload, so the payload is not copied).
   */
  public ArchivedEvent read(JsonParser p, String wanted) throws IOException, BadRecordException {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw new BadRecordException("expected a JSON object, found " + describe(p.currentToken()));
    }
    String id = null;
    String topic = null;
    String aggregateType = null;
    String aggregateId = null;
    Instant createdAt = null;
    String payload = null;
    Map<String, String> headers = null;
    Long sequence = null;
    Integer schemaVersion = null;
    Instant occurredAt = null;
    String traceParent = null;
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String field = p.currentName();
      JsonToken value = p.nextToken();
      if (value == JsonToken.VALUE_NULL && ENVELOPE_FIELDS.contains(field)) {
        continue; // absent
      }
      if (field.equals("sequence")) {
        sequence = whole(p, field);
        sequence = sequence == 0 ? null : sequence; // 0: the store numbered none
      } else if (field.equals("schema_version")) {
        schemaVersion = Math.toIntExact(whole(p, field));
      } else if (field.equals(occurredAtField)) {
        occurredAt = instant(string(p, field));
      } else if (field.equals("trace_parent")) {
        traceParent = string(p, field);
        traceParent = traceParent.isEmpty() ? null : traceParent;
      } else if (field.equals(idField)) {
        id = requireId(string(p, field));
      } else if (field.equals("topic")) {
        topic = string(p, field);
        if (wanted != null && !wanted.equals(topic)) {
          skipRest(p);
          return null;
        }
      } else if (field.equals("aggregate_type")) {
        aggregateType = optionalString(p, field);
      } else if (field.equals("aggregate_id")) {
        aggregateId = optionalString(p, field);
      } else if (field.equals(createdAtField)) {
        createdAt = instant(string(p, field));
      } else if (field.equals("payload")) {
        payload = payload(p);
      } else if (field.equals("headers")) {
        headers = headers(p);
      } else if (value == JsonToken.START_OBJECT || value == JsonToken.START_ARRAY) {
        p.skipChildren();
      }
    }
    require(id, idField);
    require(topic, "topic");
    require(createdAt, createdAtField);
    require(payload, "payload");
    return new ArchivedEvent(id, topic, aggregateType, aggregateId, createdAt, payload, headers,
        new ArchivedEvent.Envelope(sequence, schemaVersion, occurredAt, traceParent));
  }

  private static final Set<String> ENVELOPE_FIELDS = Set.of("sequence", "schema_version",
      "occurred_at", "occurred_at_utc", "trace_parent");

  /** A whole number >= 0, as a JSON number or (ClickHouse's 64-bit integers) as text. */
  private static long whole(JsonParser p, String field) throws IOException, BadRecordException {
    try {
      long n = p.currentToken() == JsonToken.VALUE_NUMBER_INT ? p.getLongValue() : Long.parseLong(string(p, field));
      if (n >= 0 && n <= (field.equals("schema_version") ? Integer.MAX_VALUE : Long.MAX_VALUE)) {
        return n;
      }
    } catch (NumberFormatException | com.fasterxml.jackson.core.exc.InputCoercionException e) {
      // reported below
    }
    throw new BadRecordException("field '" + field + "' must be a whole number >= 0");
  }

  private static void skipRest(JsonParser p) throws IOException {
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      p.nextToken();
      p.skipChildren();
    }
  }

  private static void require(Object value, String field) throws BadRecordException {
    if (value == null) {
      throw new BadRecordException("field '" + field + "' is missing");
    }
  }

  private static String string(JsonParser p, String field) throws IOException, BadRecordException {
    if (p.currentToken() != JsonToken.VALUE_STRING) {
      throw new BadRecordException("field '" + field + "' must be a string, found " + describe(p.currentToken()));
    }
    return p.getText();
  }

  private static String optionalString(JsonParser p, String field) throws IOException, BadRecordException {
    return p.currentToken() == JsonToken.VALUE_NULL ? null : string(p, field);
  }

  private String requireId(String id) throws BadRecordException {
    if (id.isEmpty() || id.length() > MAX_ID_LENGTH) {
      throw new BadRecordException("field '" + idField + "' must be 1 to " + MAX_ID_LENGTH + " characters long");
    }
    for (int i = 0; i < id.length(); i++) {
      if (Character.isISOControl(id.charAt(i)) || Character.isWhitespace(id.charAt(i))) {
        throw new BadRecordException("field '" + idField + "' contains a space or control character at index "
            + i + ": ids become header values and message ids");
      }
    }
    return id;
  }

  private Instant instant(String text) throws BadRecordException {
    try {
      return clickHouse ? Timestamps.parseClickHouseUtc(text) : Timestamps.parse(text);
    } catch (IllegalArgumentException e) {
      throw new BadRecordException("field '" + createdAtField + "': " + e.getMessage());
    }
  }

  private String payload(JsonParser p) throws IOException, BadRecordException {
    if (clickHouse) {
      String text = string(p, "payload");
      try {
        return JsonText.compact(text);
      } catch (IOException e) {
        throw new BadRecordException("column 'payload' is not JSON text: "
            + firstLine(JsonText.withoutInput(e.getMessage())));
      }
    }
    return JsonText.compact(p);
  }

  private Map<String, String> headers(JsonParser p) throws IOException, BadRecordException {
    if (p.currentToken() == JsonToken.VALUE_NULL) {
      return null;
    }
    if (clickHouse && p.currentToken() == JsonToken.VALUE_STRING) {
      String text = p.getText();
      if (text.isBlank()) {
        return null;
      }
      try (JsonParser inner = JsonText.FACTORY.createParser(text)) {
        inner.nextToken();
        return headerObject(inner);
      } catch (IOException e) {
        throw new BadRecordException("column 'headers' is not a JSON object: "
            + firstLine(JsonText.withoutInput(e.getMessage())));
      }
    }
    return headerObject(p);
  }

  private static Map<String, String> headerObject(JsonParser p) throws IOException, BadRecordException {
    if (p.currentToken() != JsonToken.START_OBJECT) {
      throw new BadRecordException("field 'headers' must be an object of strings, found "
          + describe(p.currentToken()));
    }
    Map<String, String> headers = new LinkedHashMap<>();
    while (p.nextToken() == JsonToken.FIELD_NAME) {
      String name = p.currentName();
      if (!HEADER_NAME.matcher(name).matches()) {
        throw new BadRecordException("header name '" + name + "' is invalid: use visible ASCII without ':'");
      }
      if (p.nextToken() != JsonToken.VALUE_STRING) {
        throw new BadRecordException("header '" + name + "' must be a string, found " + describe(p.currentToken()));
      }
      String value = p.getText();
      for (int i = 0; i < value.length(); i++) {
        char c = value.charAt(i);
        if ((c < 0x20 && c != '\t') || c > 0x7e) {
          // NATS headers are ASCII: better to stop here than to fail mid-replay on this record
          throw new BadRecordException("header '" + name + "' has a character NATS headers cannot carry at index "
              + i + " (U+" + String.format(Locale.ROOT, "%04X", (int) c) + "): header values are printable ASCII");
        }
      }
      headers.put(name, value);
    }
    return headers;
  }

  private static String describe(JsonToken token) {
    if (token == null) {
      return "the end of the input";
    }
    return switch (token) {
      case START_OBJECT -> "an object";
      case START_ARRAY -> "an array";
      case VALUE_STRING -> "a string";
      case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> "a number";
      case VALUE_TRUE, VALUE_FALSE -> "a boolean";
      case VALUE_NULL -> "null";
      default -> token.toString();
    };
  }

  static String firstLine(String message) {
    if (message == null) {
      return "";
    }
    int nl = message.indexOf('\n');
    return nl < 0 ? message : message.substring(0, nl);
  }
}
