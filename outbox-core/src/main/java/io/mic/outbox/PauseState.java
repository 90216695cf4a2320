package io.mic.outbox;

import java.util.Objects;
import java.util.Set;

/**
 * Pauses recorded in a store for every process that dispatches from it, as {@link OutboxStore#pauseState()}
 * reports them: either everything is paused, or a set of topics (possibly empty).
 *
 * <pre>{@code
 * PauseState state = store.pauseState();
 * if (!state.all() && !state.topics().contains("order.created")) { ... }
 * }</pre>
 */
public record PauseState(boolean all, Set<String> topics) {
  /** Nothing paused. */
  public static final PauseState NONE = new PauseState(false, Set.of());
  /** Every topic paused. */
  public static final PauseState ALL = new PauseState(true, Set.of());

  public PauseState {
    topics = Set.copyOf(Objects.requireNonNull(topics, "topics"));
  }

  /** The topics in {@code topics} paused; {@link #NONE} when it is empty. */
  public static PauseState topics(Set<String> topics) {
    return topics.isEmpty() ? NONE : new PauseState(false, topics);
  }
}
