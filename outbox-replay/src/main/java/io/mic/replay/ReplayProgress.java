package io.mic.replay;

/**
 * Receives the progress of a long replay. Called often (every few thousand records): implementations
 * decide how often to show it.
 *
 * <pre>{@code
 * ReplayProgress progress = new ReplayProgress() {
 *   public void published(long count) { metrics.set(count); }
 * };
 * }</pre>
 */
public interface ReplayProgress {
  ReplayProgress NONE = new ReplayProgress() {};

  /** A source read {@code records} records so far, of which {@code selected} match the query. */
  default void read(long records, long selected) {}

  /** The sink acknowledged {@code count} events so far. */
  default void published(long count) {}
}
