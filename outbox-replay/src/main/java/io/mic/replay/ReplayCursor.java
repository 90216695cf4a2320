package io.mic.replay;

import io.mic.outbox.archive.ArchivedEvent;

/**
 * The selected events of a source, in replay order, read one at a time.
 *
 * <pre>{@code
 * try (ReplayCursor cursor = source.open(query, ReplayProgress.NONE)) {
 *   for (ArchivedEvent e = cursor.next(); e != null; e = cursor.next()) { ... }
 * }
 * }</pre>
 */
public interface ReplayCursor extends AutoCloseable {

  /**
   * The next event in {@code (created_at, id)} order, or {@code null} after the last one.
   *
   * @throws ReplayInputException the archive cannot be read any further
   */
  ArchivedEvent next();

  /** Releases what the cursor holds (temporary files, an HTTP response). */
  @Override
  void close();
}
