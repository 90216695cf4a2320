package io.mic.replay;

import io.mic.outbox.archive.ArchivedEvent;
import java.time.Instant;

/**
 * What a replay selects: one topic and an inclusive time range {@code from <= created_at <= to}.
 *
 * <pre>{@code
 * new ReplayQuery("order.created", Instant.parse("2026-09-29T08:00:00Z"), Instant.parse("2026-09-29T10:00:00Z"));
 * }</pre>
 */
public record ReplayQuery(String topic, Instant from, Instant to) {

  public boolean matches(ArchivedEvent event) {
    Instant t = event.createdAt();
    return topic.equals(event.topic()) && !t.isBefore(from) && !t.isAfter(to);
  }
}
