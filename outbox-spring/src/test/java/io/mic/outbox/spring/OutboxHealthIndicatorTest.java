package io.mic.outbox.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHealth;
import io.mic.outbox.PauseState;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

/** The indicator on a store other than JDBC: the paused topics leave the lag that judges health exactly. */
class OutboxHealthIndicatorTest {
  private final MovableClock clock = new MovableClock(Instant.parse("2026-03-01T08:00:00Z"));
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(clock);
  private final OutboxHealthIndicator indicator = new OutboxHealthIndicator(
      OutboxHealth.builder().store(store).clock(clock).build(), store, Duration.ofMinutes(1));

  @Test
  void pausedTopicsDoNotCountTowardTheLagOfAnInMemoryStore() {
    store.append(onTopic("billing.invoice-issued"));
    clock.advance(Duration.ofMinutes(10));
    store.append(onTopic("order.created"));
    clock.advance(Duration.ofSeconds(30));
    store.pauseState(PauseState.topics(Set.of("billing.invoice-issued")));

    Health health = indicator.health();
    assertThat(health.getStatus()).as("the paused topic's event waits on purpose").isEqualTo(Status.UP);
    assertThat(health.getDetails()).containsEntry("lag", "PT10M30S").containsEntry("unpausedLag", "PT30S")
        .containsEntry("paused", "billing.invoice-issued").containsEntry("pending", 2L);

    clock.advance(Duration.ofSeconds(31));
    health = indicator.health();
    assertThat(health.getStatus()).as("the event of the topic still running is older than maxLag")
        .isEqualTo(Status.DOWN);
    assertThat(health.getDetails()).containsEntry("unpausedLag", "PT1M1S");
  }

  private static OutboxEvent onTopic(String topic) {
    return OutboxEvent.builder().aggregate("order", topic).topic(topic).payload("{}").build();
  }

  private static final class MovableClock extends Clock {
    private Instant now;

    MovableClock(Instant start) {
      this.now = start;
    }

    void advance(Duration d) {
      now = now.plus(d);
    }

    @Override
    public Instant instant() {
      return now;
    }

    @Override
    public ZoneId getZone() {
      return ZoneOffset.UTC;
    }

    @Override
    public Clock withZone(ZoneId zone) {
      throw new UnsupportedOperationException("a test clock in UTC");
    }
  }
}
