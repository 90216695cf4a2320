package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;

class DispatchOrderTest {
  private static final Instant T0 = Instant.parse("2026-12-01T10:00:00Z");

  private static OutboxEvent stored(String id, String aggregate, int priority, int secondsAfterT0) {
    return OutboxEvent.stored().id(UUID.fromString(id)).aggregate("order", aggregate).topic("order.created")
        .payload("{}").priority(priority).createdAt(T0.plusSeconds(secondsAfterT0)).build();
  }

  @Test
  void priorityFirstThenArrivalThenIdAsBytes() {
    OutboxEvent low = stored("00000000-0000-7000-8000-000000000001", "a", Integer.MIN_VALUE, 0);
    OutboxEvent high = stored("00000000-0000-7000-8000-000000000002", "b", 5, 9);
    OutboxEvent early = stored("00000000-0000-7000-8000-000000000003", "c", 0, 1);
    // same time: the id whose first byte is 0xff sorts last as bytes, first as a signed long
    OutboxEvent idLow = stored("7fffffff-0000-7000-8000-000000000000", "d", 0, 2);
    OutboxEvent idHigh = stored("ffffffff-0000-7000-8000-000000000000", "e", 0, 2);
    List<OutboxEvent> events = new ArrayList<>(List.of(idHigh, low, idLow, early, high));

    events.sort(DispatchOrder.DISPATCH);

    assertThat(events).containsExactly(high, early, idLow, idHigh, low);
  }

  @Test
  void priorityNeverReordersAnAggregate() {
    OutboxEvent first = stored("00000000-0000-7000-8000-000000000001", "a", 0, 0);
    OutboxEvent urgentLater = stored("00000000-0000-7000-8000-000000000002", "a", 9, 1);

    assertThat(DispatchOrder.IN_AGGREGATE.compare(first, urgentLater)).isNegative();
    assertThat(DispatchOrder.inWaves(List.of(urgentLater, first))).containsExactly(first, urgentLater);
  }

  @Test
  void runsGoOutInWavesHeadsInDispatchOrder() {
    OutboxEvent a1 = stored("00000000-0000-7000-8000-000000000001", "a", 0, 0);
    OutboxEvent a2 = stored("00000000-0000-7000-8000-000000000002", "a", 0, 3);
    OutboxEvent a3 = stored("00000000-0000-7000-8000-000000000003", "a", 0, 4);
    OutboxEvent b1 = stored("00000000-0000-7000-8000-000000000004", "b", 1, 5);
    OutboxEvent b2 = stored("00000000-0000-7000-8000-000000000005", "b", 0, 6);
    OutboxEvent c1 = stored("00000000-0000-7000-8000-000000000006", "c", 0, 2);

    List<OutboxEvent> waves = DispatchOrder.inWaves(List.of(a3, c1, b2, a2, b1, a1));

    assertThat(waves).containsExactly(b1, a1, c1, b2, a2, a3);
    assertThat(DispatchOrder.waves(waves))
        .containsExactly(List.of(b1, a1, c1), List.of(b2, a2), List.of(a3));
  }

  @Test
  void interleaveStopsAtTheLimit() {
    assertThat(DispatchOrder.interleave(List.of(List.of(1, 2, 3), List.of(10), List.of(20, 21)), 4))
        .containsExactly(1, 10, 20, 2);
    assertThat(DispatchOrder.interleave(List.of(List.of(1, 2), List.<Integer>of()), 10)).containsExactly(1, 2);
  }
}
