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
   * @throws ReplayInputException the archive cannot be opened or read
   */
  ReplayCursor open(ReplayQuery query, ReplayProgress progress);
}
