package io.mic.outbox.archive;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.StringWriter;
import java.util.regex.Pattern;

/** Compact JSON text of one value, with numbers copied digit for digit (no rounding through double). */
public final class JsonText {
  public static final JsonFactory FACTORY = new JsonFactory();

  /** The one complaint of the parser that quotes the input: up to 256 characters of it, e.g. a bare secret. */
  private static final Pattern QUOTED_TOKEN = Pattern.compile("Unrecognized token '([^']*)'");

  private JsonText() {}

  /**
   * A parser's message for an error message: an unrecognized token is told by its length, since the text
   * may be a payload's (a password, a card number), which never goes into a message.
   */
  public static String withoutInput(String parserMessage) {
    if (parserMessage == null) {
      return "";
    }
    return QUOTED_TOKEN.matcher(parserMessage)
        .replaceAll(m -> "Unrecognized token (" + m.group(1).length() + " characters)");
  }

  /** The value the parser is positioned on, as compact JSON; the parser ends on its last token. */
  public static String compact(JsonParser parser) throws IOException {
    StringWriter out = new StringWriter(64);
    try (JsonGenerator gen = FACTORY.createGenerator(out)) {
      copy(parser, gen);
    }
    return out.toString();
  }

  /** Exactly one JSON value. */
  public static String compact(String text) throws IOException {
    try (JsonParser parser = FACTORY.createParser(text)) {
      if (parser.nextToken() == null) {
        throw new IOException("empty JSON text");
      }
      String compact = compact(parser);
      if (parser.nextToken() != null) {
        throw new IOException("unexpected content after the JSON value");
      }
      return compact;
    }
  }

  public static void copy(JsonParser p, JsonGenerator gen) throws IOException {
    int depth = 0;
    do {
      JsonToken token = p.currentToken();
      switch (token) {
        case START_OBJECT -> { gen.writeStartObject(); depth++; }
        case START_ARRAY -> { gen.writeStartArray(); depth++; }
        case END_OBJECT -> { gen.writeEndObject(); depth--; }
        case END_ARRAY -> { gen.writeEndArray(); depth--; }
        case FIELD_NAME -> gen.writeFieldName(p.currentName());
        case VALUE_STRING -> gen.writeString(p.getTextCharacters(), p.getTextOffset(), p.getTextLength());
        case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> gen.writeNumber(p.getText());
        case VALUE_TRUE -> gen.writeBoolean(true);
        case VALUE_FALSE -> gen.writeBoolean(false);
        case VALUE_NULL -> gen.writeNull();
        default -> throw new IOException("unexpected JSON token " + token);
      }
    } while (depth > 0 && p.nextToken() != null);
    if (depth > 0) {
      throw new IOException("the JSON value ends before it is closed");
    }
  }
}
