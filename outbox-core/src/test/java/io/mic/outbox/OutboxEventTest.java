package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.internal.UuidV7;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class OutboxEventTest {

  private static OutboxEvent.Builder valid() {
    return OutboxEvent.builder().aggregate("order", "42").topic("order.created").payload("{\"orderId\":42}");
  }

  @Test
  void buildsWithDefaults() {
    OutboxEvent e = valid().header("tenant", "acme").build();
    assertThat(e.id().version()).isEqualTo(7);
    assertThat(e.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(e.attempts()).isZero();
    assertThat(e.priority()).isZero();
    assertThat(e.createdAt()).isNull();
    assertThat(e.headers()).isEqualTo(Map.of("tenant", "acme"));
    assertThatThrownBy(() -> e.headers().put("x", "y")).isInstanceOf(UnsupportedOperationException.class);
  }

  @Test
  void keepsAGivenId() {
    UUID id = UUID.randomUUID();
    assertThat(valid().id(id).build().id()).isEqualTo(id);
  }

  @Test
  void toStringNeverShowsThePayload() {
    assertThat(valid().payload("{\"card\":\"4111\"}").build().toString()).doesNotContain("4111").contains("order.created");
  }

  @ParameterizedTest
  @ValueSource(strings = {"", " ", "\t"})
  void blankAggregateIsRejected(String blank) {
    assertThatThrownBy(() -> valid().aggregate(blank, "1").build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("aggregateType is required and must not be blank, was '" + blank + "': set it with .aggregate(type, id)");
    assertThatThrownBy(() -> valid().aggregate("order", blank).build())
        .hasMessageStartingWith("aggregateId is required and must not be blank");
    assertThatThrownBy(() -> valid().aggregate("order", null).build())
        .hasMessageStartingWith("aggregateId is required and must not be blank, was null");
  }

  @ParameterizedTest
  @ValueSource(strings = {"order.*", "order.>", "order created", "order..created", ".order", "order.", "ordér",
      "a/b", "order.created\n"})
  void invalidTopicIsRejected(String topic) {
    assertThatThrownBy(() -> valid().topic(topic).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith("topic '" + topic + "' is invalid")
        .hasMessageContaining("no wildcards");
  }

  @ParameterizedTest
  @ValueSource(strings = {"order", "order.created", "billing.invoice-issued.v2", "A_b-9"})
  void validTopicsPass(String topic) {
    assertThat(valid().topic(topic).build().topic()).isEqualTo(topic);
  }

  @Test
  void missingFieldsAreNamed() {
    assertThatThrownBy(() -> valid().topic(null).build()).hasMessageStartingWith("topic is required");
    assertThatThrownBy(() -> valid().payload(null).build()).hasMessageStartingWith("payload is required");
    assertThatThrownBy(() -> valid().topic("x".repeat(256)).build())
        .hasMessage("topic is 256 characters long; the limit is 255");
  }

  @ParameterizedTest
  @ValueSource(strings = {"{", "{\"a\":}", "not json", "{} {}", "[1,2", "{'a':1}", ""})
  void payloadThatIsNotJsonIsRejected(String payload) {
    assertThatThrownBy(() -> valid().payload(payload).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith("payload is not valid JSON: ");
  }

  @ParameterizedTest
  @ValueSource(strings = {"{}", "[]", "42", "\"text\"", "null", "true", " {\"a\":[1,{\"b\":null}]} \n"})
  void anyJsonValuePasses(String payload) {
    assertThat(valid().payload(payload).build().payload()).isEqualTo(payload);
  }

  @Test
  void trailingContentIsLocated() {
    assertThatThrownBy(() -> valid().payload("{\"a\":1} [2]").build())
        .hasMessageContaining("unexpected content after the first value");
  }

  @Test
  void oversizePayloadStatesTheLimit() {
    String big = "\"" + "\u00e9".repeat(OutboxEvent.MAX_PAYLOAD_BYTES / 2) + "\""; // 2 bytes per char in UTF-8
    assertThatThrownBy(() -> valid().payload(big).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("payload is " + (OutboxEvent.MAX_PAYLOAD_BYTES + 2) + " bytes of UTF-8; the limit is 1048576"
            + " bytes (OutboxEvent.MAX_PAYLOAD_BYTES): store large documents elsewhere and send a reference");
    String fits = "\"" + "x".repeat(OutboxEvent.MAX_PAYLOAD_BYTES - 2) + "\"";
    assertThat(valid().payload(fits).build().payload()).hasSize(OutboxEvent.MAX_PAYLOAD_BYTES);
  }

  @Test
  void headersWithLineBreaksOrBadNamesAreRejected() {
    assertThatThrownBy(() -> valid().header("trace", "a\r\nInjected: yes"))
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("header 'trace' contains a CR or LF character at index 1: header values must be a single line");
    assertThatThrownBy(() -> valid().header("bad name", "v")).hasMessageStartingWith("header name 'bad name' is invalid");
    assertThatThrownBy(() -> valid().header("a:b", "v")).hasMessageStartingWith("header name 'a:b' is invalid");
    assertThatThrownBy(() -> valid().header("x\n", "v")).hasMessageStartingWith("header name 'x\n' is invalid");
    assertThatThrownBy(() -> valid().header("k", null)).hasMessageContaining("null value");
  }

  @ParameterizedTest
  @ValueSource(strings = {"x-event-id", "X-Event-Id", "Nats-Msg-Id", "x-replay", "x-original-event-id"})
  void reservedHeadersAreRejected(String name) {
    assertThatThrownBy(() -> valid().header(name, "v"))
        .hasMessage("header '" + name + "' is set by MIC Outbox on every publication; choose another name");
  }

  @Test
  void uuidV7IdsIncreaseStrictlyInBuildOrder() {
    List<UUID> ids = new ArrayList<>();
    for (int i = 0; i < 100_000; i++) {
      ids.add(UuidV7.next());
    }
    for (int i = 1; i < ids.size(); i++) {
      assertThat(UuidV7.ORDER.compare(ids.get(i - 1), ids.get(i))).as("id %d", i).isNegative();
    }
    assertThat(ids.get(0).version()).isEqualTo(7);
    assertThat(ids.get(0).variant()).isEqualTo(2);
    long millis = ids.get(0).getMostSignificantBits() >>> 16;
    assertThat(millis).isBetween(System.currentTimeMillis() - 60_000, System.currentTimeMillis() + 1_000);
  }
}
