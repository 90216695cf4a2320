package io.mic.outbox.internal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/** JSON checks on jackson-core's streaming parser: no tree is built, so a check costs one pass. */
public final class Json {
  private static final JsonFactory FACTORY = new JsonFactory();

  private Json() {}

  /** {@code null} when {@code text} is exactly one JSON value, else what is wrong and where. */
  public static String problem(String text) {
    try (JsonParser parser = FACTORY.createParser(text)) {
      if (parser.nextToken() == null) {
        return "it is empty";
      }
      parser.skipChildren();
      JsonToken extra = parser.nextToken();
      if (extra != null) {
        return "unexpected content after the first value at character "
            + (parser.currentTokenLocation().getCharOffset() + 1) + "; send one JSON value";
      }
      return null;
    } catch (JsonProcessingException e) {
      return e.getOriginalMessage() + " at line " + e.getLocation().getLineNr()
          + ", column " + e.getLocation().getColumnNr();
    } catch (IOException e) {
      return e.getMessage();
    }
  }

  public static JsonFactory factory() {
    return FACTORY;
  }
}
