package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.testkit.OffsetClock;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The envelope beyond id and aggregate: sequence, schema version, business time, trace context. */
class EnvelopeTest {
  private static final String TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private static OutboxEvent.Builder valid() {
    return OutboxEvent.builder().aggregate("order", "42").topic("order.created").payload("{}");
  }

  @Test
  void defaults() {
    OutboxEvent e = valid().build();
    assertThat(e.sequence()).isZero();
    assertThat(e.schemaVersion()).isEqualTo(1);
    assertThat(e.occurredAt()).as("the append time, unknown before the append").isNull();
    assertThat(e.traceParent()).isNull();
  }

  @Test
  void keepsWhatTheBuilderSets() {
    Instant occurred = Instant.parse("2026-09-29T08:00:00.123456Z");
    OutboxEvent e = valid().schemaVersion(3).occurredAt(occurred).traceParent(TRACE).build();
    assertThat(e.schemaVersion()).isEqualTo(3);
    assertThat(e.occurredAt()).isEqualTo(occurred);
    assertThat(e.traceParent()).isEqualTo(TRACE);
  }

  @Test
  void schemaVersionStartsAtOne() {
    assertThatThrownBy(() -> valid().schemaVersion(0).build()).isInstanceOf(InvalidEventException.class)
        .hasMessage("schemaVersion must be >= 1, was 0: number the versions of a payload's schema from 1");
  }

  @ParameterizedTest
  @ValueSource(strings = {
      "", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", // no flags
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // upper case
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace id
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero parent id
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // forbidden version
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\nx: y"})
  void traceParentMustBeW3c(String value) {
    assertThatThrownBy(() -> valid().traceParent(value).build()).isInstanceOf(InvalidEventException.class)
        .hasMessageStartingWith("traceParent must be a W3C traceparent such as");
  }

  @ParameterizedTest
  @ValueSource(strings = {"x-sequence", "X-Schema-Version", "x-occurred-at", "traceparent"})
  void envelopeHeadersAreReserved(String name) {
    assertThatThrownBy(() -> valid().header(name, "1")).isInstanceOf(InvalidEventException.class)
        .hasMessageContaining(name);
  }

  @Test
  void theInMemoryStoreNumbersEachAggregateFromOne() {
    InMemoryOutboxStore store = new InMemoryOutboxStore(new OffsetClock());
    OutboxEvent a1 = valid().build();
    OutboxEvent b1 = OutboxEvent.builder().aggregate("order", "43").topic("order.created").payload("{}").build();
    OutboxEvent a2 = valid().build();
    OutboxEvent other = OutboxEvent.builder().aggregate("invoice", "42").topic("invoice.issued").payload("{}").build();
    store.append(List.of(a1, b1));
    store.append(a2);
    store.append(other);
    assertThat(List.of(a1, b1, a2, other)).extracting(e -> store.find(e.id()).orElseThrow().sequence())
        .containsExactly(1L, 1L, 2L, 1L);
    OutboxEvent stored = store.find(a1.id()).orElseThrow();
    assertThat(stored.occurredAt()).as("defaults to the append time").isEqualTo(stored.createdAt());
  }

  @Test
  void headersCarryTheWholeEnvelope() {
    UUID id = UUID.fromString("0190c9a0-0000-7000-8000-000000000001");
    Instant created = Instant.parse("2026-09-29T08:00:00.5Z");
    OutboxEvent e = OutboxEvent.stored().id(id).aggregate("order", "42").topic("order.created").payload("{}")
        .headers(Map.of("tenant", "acme")).createdAt(created).sequence(7).schemaVersion(2).traceParent(TRACE)
        .build();
    Map<String, String> expected = new LinkedHashMap<>();
    expected.put("tenant", "acme");
    expected.put("x-event-id", id.toString());
    expected.put("x-aggregate-type", "order");
    expected.put("x-aggregate-id", "42");
    expected.put("x-sequence", "7");
    expected.put("x-schema-version", "2");
    expected.put("x-occurred-at", "2026-09-29T08:00:00.500Z");
    expected.put("traceparent", TRACE);
    assertThat(OutboxHeaders.of(e)).containsExactlyEntriesOf(expected);
  }

  @Test
  void aReplayedDeliveryIsDeduplicatedOnItsOriginalId() {
    Map<String, String> live = Map.of("x-event-id", "e1");
    Map<String, String> replayed = Map.of("x-event-id", "r9", "x-original-event-id", "e1");
    assertThat(OutboxHeaders.idempotencyKey(live::get)).isEqualTo("e1");
    assertThat(OutboxHeaders.idempotencyKey(replayed::get)).isEqualTo("e1");
    assertThat(OutboxHeaders.idempotencyKey(Map.<String, String>of()::get)).isNull();
  }
}
