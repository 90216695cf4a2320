package io.mic.replay;

/**
 * An archive to replay from: {@link JsonArchiveSource}, {@link ClickHouseArchiveSource}, or your own.
 *
 * <pre>{@code
 * ReplaySource source = JsonArchiveSource.of(Path.of("archive.jsonl.gz"));
 * }</pre>
 */
@FunctionalInterface
public interface ReplaySource {

  /**
   * Opens the events that match {@code query}, in {@code (created_at, id)} order: ascending creation
   * time, ties broken by the id compared character by character (Unicode code points, which is also the
   * byte order of their UTF-8 form).
   *
   * <p>Every selected event passes {@code check} before this method returns: an event that fails it stops
   * the replay before the first publication ({@link UnpublishableEventException}, naming where the event is).
   *
   * @throws ReplayInputException the archive cannot be opened or read, or an event failed {@code check}
   */
  ReplayCursor open(ReplayQuery query, ReplayProgress progress, EventCheck check);

  /** {@link #open(ReplayQuery, ReplayProgress, EventCheck)} without a check. */
  default ReplayCursor open(ReplayQuery query, ReplayProgress progress) {
    return open(query, progress, EventCheck.NONE);
  }
}
