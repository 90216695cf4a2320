package io.mic.outbox.examples;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/** The payload of {@code order.created} as billing reads it: {@code {"orderId":"42","amountCents":1250}}. */
record OrderCreated(String orderId, long amountCents) {
  private static final JsonFactory JSON = new JsonFactory();

  /**
   * Reads the payload; unknown fields are skipped.
   *
   * @throws IllegalArgumentException if it is not such an object; the message never quotes the payload
   */
  static OrderCreated parse(String payload) {
    String orderId = null;
    Long amountCents = null;
    try (JsonParser p = JSON.createParser(payload)) {
      if (p.nextToken() != JsonToken.START_OBJECT) {
        throw new IllegalArgumentException("order.created payload is not a JSON object");
      }
      while (p.nextToken() == JsonToken.FIELD_NAME) {
        String field = p.currentName();
        JsonToken value = p.nextToken();
        if (field.equals("orderId") && value == JsonToken.VALUE_STRING) {
          orderId = p.getText();
        } else if (field.equals("amountCents") && value == JsonToken.VALUE_NUMBER_INT) {
          amountCents = p.getLongValue();
        } else {
          p.skipChildren();
        }
      }
    } catch (IOException e) {
      throw new IllegalArgumentException("order.created payload is not valid JSON (" + e.getClass().getSimpleName() + ")");
    }
    if (orderId == null || orderId.isBlank() || amountCents == null) {
      throw new IllegalArgumentException("order.created payload lacks orderId (string) or amountCents (integer)");
    }
    return new OrderCreated(orderId, amountCents);
  }
}
