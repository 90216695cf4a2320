package io.mic.replay;

import java.util.List;

/**
 * Where a replay publishes: a broker's publisher ({@link PublisherSink}), {@link DryRunSink}, or your own.
 *
 * <pre>{@code
 * ReplaySink sink = PublisherSink.of(natsPublisher);
 * }</pre>
 */
public interface ReplaySink extends AutoCloseable {

  /**
   * Called once before the archive is read, to fail fast: e.g. the stream does not exist.
   *
   * @throws ReplayConfigurationException the destination is misconfigured
   * @throws ReplaySinkException the destination cannot be reached (index 0: nothing published)
   */
  default void prepare(ReplayQuery query) throws InterruptedException {}

  /**
   * Checks that this sink can publish {@code message} (header characters, size limits, whatever the destination
   * refuses). Called after {@link #prepare} for every selected event before the first publication, so an event
   * the destination can never take stops the replay with nothing published. The default accepts everything.
   *
   * @throws UnpublishableEventException what is wrong and the fix, naming the event but never its payload
   */
  default void validate(ReplayMessage message) {}

  /** Returns once every message was acknowledged, in order; else names the first that was not. */
  void publish(List<ReplayMessage> messages) throws InterruptedException;

  /**
   * How many publications so far the destination acknowledged as duplicates it dropped (JetStream within
   * its duplicate window, e.g. a re-run of the same batch id); 0 where the destination cannot tell.
   */
  default long duplicates() {
    return 0;
  }

  /** The command's summary says whether it was a dry run. */
  default boolean isDryRun() {
    return false;
  }

  @Override
  default void close() {}
}
