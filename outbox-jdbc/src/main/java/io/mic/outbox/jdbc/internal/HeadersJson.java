package io.mic.outbox.jdbc.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.mic.outbox.OutboxException;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.Map;

/** Event headers as a JSON object of strings, written and read with jackson-core's streaming API. */
public final class HeadersJson {
  private static final JsonFactory JSON = new JsonFactory(); // thread-safe once configured, as here: not at all

  private HeadersJson() {}

  public static String write(Map<String, String> headers) {
    if (headers.isEmpty()) {
      return "{}";
    }
    StringWriter out = new StringWriter();
    try (JsonGenerator g = JSON.createGenerator(out)) {
      g.writeStartObject();
      for (Map.Entry<String, String> h : headers.entrySet()) {
        g.writeStringField(h.getKey(), h.getValue());
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toString();
  }

  public static Map<String, String> read(String json) {
    Map<String, String> headers = new LinkedHashMap<>();
    if (json == null || json.equals("{}")) {
      return headers;
    }
    try (JsonParser p = JSON.createParser(json)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new OutboxException("the headers column must hold a JSON object of strings");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String name = p.currentName();
        p.nextToken();
        headers.put(name, p.getValueAsString());
      }
    } catch (IOException e) {
      throw new OutboxException("the headers column must hold a JSON object of strings, and is not valid JSON");
    }
    return headers;
  }
}
