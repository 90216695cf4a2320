package io.mic.replay;

import io.mic.outbox.archive.ArchivedEvent;

/**
 * A check every selected event must pass before the first publication: a source calls it on each event it
 * selects before it hands out the first one, so an event the destination can never take stops the replay
 * with nothing published. {@link EventReplay} builds it from {@link ReplaySink#validate}.
 *
 * <pre>{@code
 * try (ReplayCursor cursor = source.open(query, ReplayProgress.NONE, e -> sink.validate(ReplayMessage.of(e, "b1")))) { ... }
 * }</pre>
 */
@FunctionalInterface
public interface EventCheck {
  /** Accepts every event: a dry run, or a caller that checks nothing. */
  EventCheck NONE = event -> {};

  /** @throws UnpublishableEventException what is wrong with the event (never its payload text) */
  void check(ArchivedEvent event);
}
