package io.mic.outbox;

import static io.mic.outbox.OutboxEvent.MAX_HEADERS_BYTES;
import static io.mic.outbox.OutboxEvent.MAX_HEADER_NAME_LENGTH;
import static io.mic.outbox.OutboxEvent.MAX_HEADER_VALUE_LENGTH;
import static io.mic.outbox.OutboxEvent.MAX_NAME_LENGTH;
import static io.mic.outbox.OutboxEvent.MAX_PAYLOAD_BYTES;

import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The append-time rules of an {@link OutboxEvent}, checked by {@link OutboxEvent.Builder}. Each check
 * throws an {@link InvalidEventException} whose message names the field, the value and the fix; the
 * messages are API (users and tests match them).
 */
final class EventRules {

  /** W3C trace context, version 00: version, trace id, parent id, flags, in lower-case hex. */
  private static final Pattern TRACE_PARENT = Pattern.compile("00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}");
  private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*");
  /** An HTTP token (RFC 7230 {@code tchar}), which every broker's header names accept. */
  private static final Pattern HEADER_NAME = Pattern.compile("[A-Za-z0-9!#$%&'*+.^_`|~-]+");
  private static final String BROKER_HEADER_PREFIX = "nats-";

  private EventRules() {}

  /** The names publishers set themselves, and {@code nats-msg-id}, lower-case. */
  static Set<String> reservedHeaders() {
    Set<String> names = new HashSet<>(OutboxHeaders.RESERVED);
    names.add("nats-msg-id");
    return Set.copyOf(names);
  }

  static String requireName(String field, String header, String value) {
    if (value == null || value.isBlank()) {
      throw new InvalidEventException(field + " is required and must not be blank, was "
          + (value == null ? "null" : "'" + value + "'") + ": set it with .aggregate(type, id)");
    }
    if (value.length() > MAX_NAME_LENGTH) {
      throw new InvalidEventException(field + " is " + value.length() + " characters long; the limit is "
          + MAX_NAME_LENGTH);
    }
    if (value.startsWith(" ") || value.endsWith(" ")) {
      throw new InvalidEventException(field + " '" + value + "' starts or ends with a space; databases that"
          + " compare text ignoring trailing spaces (MariaDB, MySQL) would take it for '" + value.strip()
          + "': strip it");
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c < 0x20 || c > 0x7e) {
        throw new InvalidEventException(field + " contains " + describe(c) + " at index " + i
            + ": the aggregate travels in NATS headers (" + header + "), which carry printable ASCII only;"
            + " encode it, e.g. percent-encoding");
      }
    }
    return value;
  }

  static String requireTopic(String topic) {
    if (topic == null || topic.isEmpty()) {
      throw new InvalidEventException("topic is required: set it with .topic(\"order.created\")");
    }
    if (topic.length() > MAX_NAME_LENGTH) {
      throw new InvalidEventException("topic is " + topic.length() + " characters long; the limit is "
          + MAX_NAME_LENGTH);
    }
    if (!TOPIC.matcher(topic).matches()) {
      throw new InvalidEventException("topic '" + topic + "' is invalid: use letters, digits, '_', '-' and"
          + " '.' between non-empty parts (no wildcards '*' or '>', no spaces, no leading, trailing or"
          + " double dots), e.g. 'order.created'");
    }
    return topic;
  }

  static String requireJson(String payload, long headersBytes) {
    if (payload == null) {
      throw new InvalidEventException("payload is required: set it with .payload(jsonText)");
    }
    long bytes = utf8Length(payload);
    if (bytes + headersBytes > MAX_PAYLOAD_BYTES) {
      String size = headersBytes == 0 ? "payload is " + bytes + " bytes of UTF-8"
          : "payload and headers are " + (bytes + headersBytes) + " bytes (payload " + bytes + ", headers "
              + headersBytes + ")";
      throw new InvalidEventException(size + "; the limit is " + MAX_PAYLOAD_BYTES
          + " bytes (OutboxEvent.MAX_PAYLOAD_BYTES): store large documents elsewhere and send a reference");
    }
    Json.Problem problem = Json.problem(payload);
    if (problem != null && problem.limit()) {
      throw new InvalidEventException("payload exceeds a limit of the JSON parser (" + problem.text()
          + "): nest at most 1000 levels and write numbers with at most 1000 digits (send longer ones as"
          + " strings)");
    }
    if (problem != null) {
      throw new InvalidEventException("payload is not valid JSON: " + problem.text());
    }
    return payload;
  }

  static int requireSchemaVersion(int schemaVersion) {
    if (schemaVersion < 1) {
      throw new InvalidEventException("schemaVersion must be >= 1, was " + schemaVersion
          + ": number the versions of a payload's schema from 1");
    }
    return schemaVersion;
  }

  static String requireTraceParent(String value) {
    if (value == null) {
      return null;
    }
    Matcher m = TRACE_PARENT.matcher(value);
    if (!m.matches() || m.group(1).chars().allMatch(c -> c == '0') || m.group(2).chars().allMatch(c -> c == '0')) {
      throw new InvalidEventException("traceParent must be a W3C traceparent such as"
          + " '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' (version 00, lower-case hex, trace and"
          + " parent ids not all zero), was '" + (value.length() > 80 ? value.substring(0, 80) + "…" : value) + "'");
    }
    return value;
  }

  /** The size of {@code headers} as they travel: {@code name: value} and CR LF each (ASCII: one byte a char). */
  static long headersBytes(Map<String, String> headers) {
    long bytes = 0;
    for (Map.Entry<String, String> h : headers.entrySet()) {
      bytes += h.getKey().length() + 2 + h.getValue().length() + 2;
    }
    if (bytes > MAX_HEADERS_BYTES) {
      throw new InvalidEventException("headers are " + bytes + " bytes on the wire; the limit is "
          + MAX_HEADERS_BYTES + " (OutboxEvent.MAX_HEADERS_BYTES): send fewer or shorter headers, or move the"
          + " data into the payload");
    }
    return bytes;
  }

  static void requireHeader(String name, String value) {
    if (name == null || name.isEmpty() || name.length() > MAX_HEADER_NAME_LENGTH
        || !HEADER_NAME.matcher(name).matches()) {
      throw new InvalidEventException("header name " + (name == null ? "null" : "'" + name + "'")
          + " is invalid: use 1 to " + MAX_HEADER_NAME_LENGTH
          + " letters, digits or !#$%&'*+-.^_`|~ (an HTTP token), e.g. 'tenant'");
    }
    String lower = name.toLowerCase(Locale.ROOT);
    if (OutboxEvent.RESERVED_HEADERS.contains(lower)) {
      throw new InvalidEventException("header '" + name + "' is set by MIC Outbox on every publication;"
          + " choose another name");
    }
    if (lower.startsWith(BROKER_HEADER_PREFIX)) {
      throw new InvalidEventException("header '" + name + "' is in the 'Nats-' namespace, which NATS JetStream"
          + " interprets (expected stream, rollup, deduplication …): choose a name without that prefix");
    }
    if (value == null) {
      throw new InvalidEventException("header '" + name + "' has a null value: omit the header instead");
    }
    if (value.length() > MAX_HEADER_VALUE_LENGTH) {
      throw new InvalidEventException("header '" + name + "' is " + value.length()
          + " characters long; the limit is " + MAX_HEADER_VALUE_LENGTH);
    }
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      if (c == '\r' || c == '\n' || c == 0) {
        throw new InvalidEventException("header '" + name + "' contains a " + (c == 0 ? "NUL" : "CR or LF")
            + " character at index " + i + ": header values must be a single line");
      }
      if (c > 0x7f) {
        throw new InvalidEventException("header '" + name + "' contains a non-ASCII character at index " + i
            + ": NATS headers carry printable ASCII only; percent-encode the value or move it into the payload");
      }
      if (c < 0x20 || c == 0x7f) {
        throw new InvalidEventException("header '" + name + "' contains " + describe(c) + " at index " + i
            + ": header values must be printable ASCII");
      }
    }
  }

  /** The UTF-8 length of {@code text}; refuses a lone surrogate, which has no UTF-8 form. */
  private static long utf8Length(String text) {
    long bytes = 0;
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x80) {
        bytes += 1;
      } else if (c < 0x800) {
        bytes += 2;
      } else if (!Character.isSurrogate(c)) {
        bytes += 3;
      } else if (Character.isHighSurrogate(c) && i + 1 < text.length()
          && Character.isLowSurrogate(text.charAt(i + 1))) {
        bytes += 4;
        i++;
      } else {
        throw new InvalidEventException(String.format("payload contains a lone UTF-16 surrogate (U+%04X) at"
            + " index %d: it has no UTF-8 form and a database would store '?' instead; fix the code that"
            + " built the text (e.g. a string cut in the middle of an emoji)", (int) c, i));
      }
    }
    return bytes;
  }

  private static String describe(char c) {
    return c > 0x7f ? "a non-ASCII character" : String.format("a control character (U+%04X)", (int) c);
  }
}
