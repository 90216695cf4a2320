package io.mic.replay;

import java.time.Duration;

/**
 * What a finished replay did.
 *
 * <pre>{@code
 * ReplayResult r = replay.run();
 * System.err.println(r.published() + " events published in batch " + r.batchId());
 * }</pre>
 *
 * @param recordsRead records the source read, matching or not (for ClickHouse: the rows it returned)
 * @param published events published (or written, in a dry run), which is every selected event
 * @param elapsed wall time of the whole replay, reading and sorting included
 * @param duplicates of the published events, those the destination dropped as duplicates of an earlier
 *     publication (a re-run of the same batch id); 0 where the destination cannot tell
 */
public record ReplayResult(String batchId, long recordsRead, long published, boolean dryRun, Duration elapsed,
    long duplicates) {

  /** Events per second over the whole run. */
  public double rate() {
    double seconds = elapsed.toNanos() / 1e9;
    return seconds <= 0 ? 0 : published / seconds;
  }
}
