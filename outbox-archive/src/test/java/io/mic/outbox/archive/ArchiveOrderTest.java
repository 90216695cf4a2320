package io.mic.outbox.archive;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The one replay order; {@link ClickHouseRoundTripTest} checks that ClickHouse returns rows in it. */
class ArchiveOrderTest {
  private static final Instant T0 = Instant.parse("2026-09-29T08:00:00Z");

  @Test
  void idsCompareByCodePointNotByUtf16Unit() {
    // U+FF21 is below U+1F600 as a code point (and in UTF-8 bytes), above its surrogate 0xD83D in UTF-16
    assertThat(ArchiveOrder.compareIds("\uFF21", "\uD83D\uDE00")).isNegative();
    assertThat("\uFF21".compareTo("\uD83D\uDE00")).isPositive();
    assertThat(ArchiveOrder.compareIds("a", "ab")).isNegative();
    assertThat(ArchiveOrder.compareIds("b", "ab")).isPositive();
    assertThat(ArchiveOrder.compareIds("ab", "ab")).isZero();
  }

  @Test
  void timeComesFirstThenTheId() {
    List<ArchivedEvent> events = new ArrayList<>(List.of(archived("\uD83D\uDE00", T0), archived("b", T0.plusMillis(1)),
        archived("\uFF21", T0), archived("a", T0)));
    events.sort(ArchiveOrder.EVENTS);
    assertThat(events).extracting(ArchivedEvent::id).containsExactly("a", "\uFF21", "\uD83D\uDE00", "b");
  }

  @Test
  void outboxEventsSortAsTheirRecordsReplay() {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      events.add(OutboxEvent.stored().id(UUID.randomUUID()).aggregate("order", "o").topic("t").payload("{}")
          .createdAt(T0.plusSeconds(i % 3)).status(OutboxStatus.DISPATCHED).build());
    }
    events.sort(ArchiveOrder.OUTBOX_EVENTS);
    assertThat(events.stream().map(e -> archived(e.id().toString(), e.createdAt())).toList())
        .isSortedAccordingTo(ArchiveOrder.EVENTS);
  }

  private static ArchivedEvent archived(String id, Instant createdAt) {
    return new ArchivedEvent(id, "t", null, null, createdAt, "{}", null);
  }
}
