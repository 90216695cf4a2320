package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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

  /** MariaDB compares '42' and '42 ' as equal: two aggregates there, one here, and its sequence counter broke. */
  @ParameterizedTest
  @ValueSource(strings = {"42 ", " 42", "4 2 "})
  void anAggregateWithLeadingOrTrailingSpacesIsRejected(String id) {
    assertThatThrownBy(() -> valid().aggregate("order", id).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("aggregateId '" + id + "' starts or ends with a space; databases that compare text ignoring"
            + " trailing spaces (MariaDB, MySQL) would take it for '" + id.strip() + "': strip it");
    assertThatThrownBy(() -> valid().aggregate(id, "1").build())
        .hasMessageStartingWith("aggregateType '" + id + "' starts or ends with a space");
    assertThat(valid().aggregate("order", "4 2").build().aggregateId()).isEqualTo("4 2");
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
        .hasMessage("payload is " + (OutboxEvent.MAX_PAYLOAD_BYTES + 2) + " bytes of UTF-8; the limit is 1044480"
            + " bytes (OutboxEvent.MAX_PAYLOAD_BYTES): store large documents elsewhere and send a reference");
    String fits = "\"" + "x".repeat(OutboxEvent.MAX_PAYLOAD_BYTES - 2) + "\"";
    assertThat(valid().payload(fits).build().payload()).hasSize(OutboxEvent.MAX_PAYLOAD_BYTES);
  }

  @Test
  void thePayloadLimitLeavesRoomForThePublishersHeadersWithinNatsMessageLimit() {
    assertThat(OutboxEvent.MAX_MESSAGE_BYTES).isEqualTo(1024 * 1024);
    assertThat(OutboxEvent.MAX_PAYLOAD_BYTES + OutboxEvent.PUBLISHER_HEADER_BYTES)
        .isEqualTo(OutboxEvent.MAX_MESSAGE_BYTES);
  }

  @Test
  void headersCountAgainstThePayloadLimit() {
    String fits = "\"" + "x".repeat(OutboxEvent.MAX_PAYLOAD_BYTES - 2) + "\"";
    // "tenant: acme\r\n" is 14 bytes on the wire
    assertThatThrownBy(() -> valid().payload(fits).header("tenant", "acme").build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("payload and headers are " + (OutboxEvent.MAX_PAYLOAD_BYTES + 14) + " bytes (payload "
            + OutboxEvent.MAX_PAYLOAD_BYTES + ", headers 14); the limit is 1044480 bytes"
            + " (OutboxEvent.MAX_PAYLOAD_BYTES): store large documents elsewhere and send a reference");
    String smaller = "\"" + "x".repeat(OutboxEvent.MAX_PAYLOAD_BYTES - 16) + "\"";
    assertThat(valid().payload(smaller).header("tenant", "acme").build().headers()).containsEntry("tenant", "acme");
  }

  @Test
  void headersTogetherMayNotExceed64KiB() {
    OutboxEvent.Builder b = valid();
    for (int i = 0; i < 16; i++) {
      b.header("h" + (char) ('a' + i), "v".repeat(OutboxEvent.MAX_HEADER_VALUE_LENGTH)); // 4,102 bytes each
    }
    assertThatThrownBy(b::build)
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("headers are 65632 bytes on the wire; the limit is 65536 (OutboxEvent.MAX_HEADERS_BYTES):"
            + " send fewer or shorter headers, or move the data into the payload");
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
  @ValueSource(strings = {"a(b)", "a/b", "a@b", "a{b}", "a\"b", "a,b", "a;b", "a=b", "a?b", "a[b]", "a\\b", "é"})
  void headerNamesMustBeHttpTokens(String name) {
    assertThatThrownBy(() -> valid().header(name, "v"))
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("header name '" + name + "' is invalid: use 1 to 128 letters, digits or !#$%&'*+-.^_`|~"
            + " (an HTTP token), e.g. 'tenant'");
  }

  @Test
  void headerValuesMustBePrintableAscii() {
    assertThatThrownBy(() -> valid().header("city", "Zürich"))
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("header 'city' contains a non-ASCII character at index 1: NATS headers carry printable"
            + " ASCII only; percent-encode the value or move it into the payload");
    assertThatThrownBy(() -> valid().header("k", "a\u0000b"))
        .hasMessage("header 'k' contains a NUL character at index 1: header values must be a single line");
    assertThatThrownBy(() -> valid().header("k", "a\u0007b"))
        .hasMessage("header 'k' contains a control character (U+0007) at index 1: header values must be"
            + " printable ASCII");
    assertThat(valid().header("k", "printable ~!@#$%^&*() ASCII").build().headers())
        .containsEntry("k", "printable ~!@#$%^&*() ASCII");
  }

  @ParameterizedTest
  @ValueSource(strings = {"x-event-id", "X-Event-Id", "Nats-Msg-Id", "x-replay", "x-original-event-id"})
  void reservedHeadersAreRejected(String name) {
    assertThatThrownBy(() -> valid().header(name, "v"))
        .hasMessage("header '" + name + "' is set by MIC Outbox on every publication; choose another name");
  }

  @ParameterizedTest
  @ValueSource(strings = {"Nats-Expected-Stream", "Nats-Rollup", "nats-expected-last-sequence", "NATS-TTL"})
  void theNatsHeaderNamespaceIsReserved(String name) {
    assertThatThrownBy(() -> valid().header(name, "sub"))
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("header '" + name + "' is in the 'Nats-' namespace, which NATS JetStream interprets"
            + " (expected stream, rollup, deduplication …): choose a name without that prefix");
  }

  @ParameterizedTest
  @ValueSource(strings = {"Zürich", "a\r\nb", "a\u0000b", "日本"})
  void aggregateTypeAndIdMustBePrintableAscii(String bad) {
    assertThatThrownBy(() -> valid().aggregate("order", bad).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith("aggregateId contains a")
        .hasMessageEndingWith(": the aggregate travels in NATS headers (x-aggregate-id), which carry printable"
            + " ASCII only; encode it, e.g. percent-encoding");
    assertThatThrownBy(() -> valid().aggregate(bad, "1").build())
        .hasMessageStartingWith("aggregateType contains a")
        .hasMessageEndingWith("(x-aggregate-type), which carry printable ASCII only; encode it, e.g. percent-encoding");
    assertThatThrownBy(() -> valid().aggregate("order", "Zürich").build())
        .hasMessage("aggregateId contains a non-ASCII character at index 1: the aggregate travels in NATS headers"
            + " (x-aggregate-id), which carry printable ASCII only; encode it, e.g. percent-encoding");
  }

  @Test
  void payloadsNestedBeyondTheParsersLimitAreRejectedWithAMessage() {
    String deep = "[".repeat(1001) + "]".repeat(1001);
    assertThatThrownBy(() -> valid().payload(deep).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith("payload exceeds a limit of the JSON parser (")
        .hasMessageContaining("1001")
        .hasMessageEndingWith("): nest at most 1000 levels and write numbers with at most 1000 digits"
            + " (send longer ones as strings)");
    assertThat(valid().payload("[".repeat(1000) + "]".repeat(1000)).build().payload()).hasSize(2000);
  }

  @Test
  void numbersLongerThanTheParsersLimitAreRejectedWithAMessage() {
    String longNumber = "{\"n\":" + "9".repeat(1001) + "}";
    assertThatThrownBy(() -> valid().payload(longNumber).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith("payload exceeds a limit of the JSON parser (")
        .hasMessageEndingWith("): nest at most 1000 levels and write numbers with at most 1000 digits"
            + " (send longer ones as strings)");
    String decimal = "[1." + "5".repeat(1001) + "]";
    assertThatThrownBy(() -> valid().payload(decimal).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith("payload exceeds a limit of the JSON parser (");
  }

  @ParameterizedTest
  @ValueSource(strings = {"\ud83d", "\ude00", "\ude00\ud83d"})
  void aLoneSurrogateInThePayloadIsRejected(String lone) {
    String payload = "{\"note\":\"a" + lone + "b\"}";
    assertThatThrownBy(() -> valid().payload(payload).build())
        .isInstanceOf(InvalidEventException.class)
        .hasMessage("payload contains a lone UTF-16 surrogate (U+" + String.format("%04X", (int) lone.charAt(0))
            + ") at index 10: it has no UTF-8 form and a database would store '?' instead; fix the code that"
            + " built the text (e.g. a string cut in the middle of an emoji)");
  }

  @Test
  void surrogatePairsAreKeptAndCountAsFourBytes() {
    String emoji = "\ud83d\ude00";
    String payload = "\"" + emoji.repeat(OutboxEvent.MAX_PAYLOAD_BYTES / 4) + "\"";
    assertThatThrownBy(() -> valid().payload(payload).build())
        .hasMessageStartingWith("payload is " + (OutboxEvent.MAX_PAYLOAD_BYTES + 2) + " bytes of UTF-8");
    assertThat(valid().payload("{\"face\":\"" + emoji + "\"}").build().payload()).contains(emoji);
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
