package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.time.Instant;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class ClaimRequestTest {
  private static final Duration TTL = Duration.ofSeconds(30);

  @Test
  void buildsEachModeFromOneValue() {
    ClaimRequest throughput = ClaimRequest.of("w#1", 500, TTL);
    assertThat(throughput).isEqualTo(new ClaimRequest("w#1", 500, TTL, false, 1, Set.of()));
    assertThat(throughput.ordered(true)).isEqualTo(new ClaimRequest("w#1", 500, TTL, true, 1, Set.of()));
    assertThat(throughput.inRuns(100).runs()).isTrue();
    assertThat(throughput.inRuns(100).ordered(false))
        .as("throughput mode has no runs").isEqualTo(throughput);
    assertThat(throughput.skipping(Set.of("billing.issued")).pausedTopics()).containsExactly("billing.issued");
  }

  @Test
  void aClaimGoingOnAfterAnEventKeepsItsPlaceThroughTheOtherOptions() {
    OutboxEvent last = OutboxEvent.builder().aggregate("order", "o1").topic("order.created").payload("{}")
        .build().toStored().createdAt(Instant.parse("2026-12-03T10:00:00Z")).build();
    ClaimRequest goingOn = ClaimRequest.of("w#2", 500, TTL).after(last);
    assertThat(goingOn.after()).isSameAs(last);
    assertThat(goingOn.skipping(Set.of("a")).after()).isSameAs(last);
    assertThat(ClaimRequest.of("w#2", 500, TTL).after()).as("from the first available event").isNull();
    assertThat(new ClaimRequest("w#2", 500, TTL, false, 1, Set.of()))
        .isEqualTo(new ClaimRequest("w#2", 500, TTL, false, 1, Set.of(), null));
  }

  @Test
  void refusesToGoOnAfterAnEventInOrderedModeOrWithoutItsArrivalTime() {
    OutboxEvent last = OutboxEvent.builder().aggregate("order", "o1").topic("order.created").payload("{}")
        .build().toStored().createdAt(Instant.parse("2026-12-03T10:00:00Z")).build();
    assertThatThrownBy(() -> ClaimRequest.of("w", 1, TTL).after(last).ordered(true))
        .hasMessage("after: a claim goes on after an event in throughput mode only; in ordered mode it starts at"
            + " the first head");
    assertThatThrownBy(() -> ClaimRequest.of("w", 1, TTL).inRuns(10).after(last))
        .hasMessageStartingWith("after: a claim goes on after an event in throughput mode only");
    OutboxEvent unstored = OutboxEvent.builder().aggregate("order", "o1").topic("order.created").payload("{}").build();
    assertThatThrownBy(() -> ClaimRequest.of("w", 1, TTL).after(unstored))
        .hasMessage("after: event " + unstored.id() + " has no arrival time; pass an event as a claim returned it");
  }

  @Test
  void keepsItsOwnCopyOfThePausedTopics() {
    Set<String> paused = new HashSet<>(Set.of("a"));
    ClaimRequest r = ClaimRequest.of("w", 1, TTL).skipping(paused);
    paused.add("b");
    assertThat(r.pausedTopics()).containsExactly("a");
  }

  @Test
  void refusesWhatNoStoreCouldDo() {
    assertThatThrownBy(() -> ClaimRequest.of("w", 0, TTL)).hasMessage("limit must be at least 1, was 0");
    assertThatThrownBy(() -> ClaimRequest.of("w", 1, Duration.ZERO)).hasMessage("leaseTtl must be positive, was PT0S");
    assertThatThrownBy(() -> new ClaimRequest("w", 1, TTL, false, 5, Set.of()))
        .hasMessage("maxRun must be 1, or more in ordered mode only, was 5 without ordering");
    assertThatThrownBy(() -> ClaimRequest.of("w", 1, TTL).inRuns(0))
        .hasMessage("maxRun must be 1, or more in ordered mode only, was 0");
    assertThatThrownBy(() -> ClaimRequest.of(null, 1, TTL)).hasMessage("owner");
  }
}
