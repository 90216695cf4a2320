package io.mic.outbox;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import java.io.IOException;

/** JSON checks on jackson-core's streaming parser: no tree is built, so a check costs one pass. */
final class Json {
  private static final JsonFactory FACTORY = new JsonFactory();

  private Json() {}

  /**
   * What is wrong with a JSON text: {@code limit} when the text exceeds a limit of the parser (nesting
   * depth, number length) rather than being malformed.
   */
  record Problem(String text, boolean limit) {}

  /** {@code null} when {@code text} is exactly one JSON value, else what is wrong and where. */
  static Problem problem(String text) {
    try (JsonParser parser = FACTORY.createParser(text)) {
      if (parser.nextToken() == null) {
        return new Problem("it is empty", false);
      }
      parser.skipChildren();
      JsonToken extra = parser.nextToken();
      if (extra != null) {
        return new Problem("unexpected content after the first value at character "
            + (parser.currentTokenLocation().getCharOffset() + 1) + "; send one JSON value", false);
      }
      return null;
    } catch (StreamConstraintsException e) {
      return new Problem(e.getOriginalMessage(), true); // carries no location
    } catch (JsonProcessingException e) {
      return new Problem(e.getLocation() == null ? e.getOriginalMessage()
          : e.getOriginalMessage() + " at line " + e.getLocation().getLineNr()
              + ", column " + e.getLocation().getColumnNr(), false);
    } catch (IOException e) {
      return new Problem(e.getMessage(), false);
    }
  }
}
