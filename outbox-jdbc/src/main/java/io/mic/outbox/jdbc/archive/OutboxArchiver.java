package io.mic.outbox.jdbc.archive;

import io.mic.outbox.ArchiveException;
import io.mic.outbox.ArchiveSink;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.DispatchedEvents;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Copies {@code DISPATCHED} events to one or more immutable archives, then deletes them from the outbox:
 * retention that keeps history replayable with {@code mic-events-replay}. Use it <em>instead of</em>
 * {@code OutboxMaintenance.purgeDispatchedOlderThan} (which deletes without archiving).
 *
 * <pre>{@code
 * OutboxArchiver archiver = OutboxArchiver.builder()
 *     .store(store)
 *     .sink(JsonLinesArchive.builder().directory(Path.of("/var/lib/outbox-archive")).build())
 *     .sink(ClickHouseArchive.builder().url("http://clickhouse:8123").table("outbox_archive").build())
 *     .build();
 * scheduler.scheduleWithFixedDelay(() -> archiver.archiveAndPurge(Duration.ofDays(7)), 1, 60, TimeUnit.MINUTES);
 * }</pre>
 *
 * <p>A page is deleted only once every sink has confirmed it durable, and no lock is held while it is
 * written. <b>At least once, never lost:</b> a crash between the write and the delete archives a page twice
 * (replay keeps the copies adjacent; consumers deduplicate on the original id); run one archiver per table
 * (docs/operations.md). Thread-safe if its sinks are.
 */
public final class OutboxArchiver {
  public static final int DEFAULT_BATCH_SIZE = 1_000;
  public static final int MAX_BATCH_SIZE = DispatchedEvents.MAX_PAGE;

  private static final Logger LOG = LoggerFactory.getLogger(OutboxArchiver.class);

  private final DispatchedEvents rows;
  private final List<ArchiveSink> sinks;
  private final int batchSize;

  private OutboxArchiver(DispatchedEvents rows, List<ArchiveSink> sinks, int batchSize) {
    this.rows = rows;
    this.sinks = List.copyOf(sinks);
    this.batchSize = batchSize;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Archives, then deletes, every {@code DISPATCHED} event dispatched more than {@code olderThan} ago,
   * page by page, until a page comes back short. {@code Duration.ZERO} archives everything dispatched so far.
   *
   * @throws io.mic.outbox.InvalidConfigurationException if {@code olderThan} is negative
   * @throws ArchiveException a sink failed: the current page stays in the outbox (earlier pages were
   *     archived and deleted; see the counts logged)
   */
  public ArchiveResult archiveAndPurge(Duration olderThan) {
    return archiveAndPurge(olderThan, soFar -> {});
  }

  /**
   * As {@link #archiveAndPurge(Duration)}, telling {@code progress} the totals so far after each page, on the
   * calling thread (e.g. for a progress line of a long run).
   */
  public ArchiveResult archiveAndPurge(Duration olderThan, Consumer<ArchiveResult> progress) {
    Objects.requireNonNull(olderThan, "olderThan");
    Objects.requireNonNull(progress, "progress");
    long archived = 0;
    long purged = 0;
    int batches = 0;
    List<OutboxEvent> page;
    do {
      page = rows.oldest(olderThan, batchSize);
      if (page.isEmpty()) {
        break;
      }
      try {
        for (ArchiveSink sink : sinks) {
          sink.archive(page);
        }
      } catch (RuntimeException e) {
        LOG.warn("outbox table {}: archive failed after {} event(s) archived and {} purged; a page of {} kept: {}",
            rows.table(), archived, purged, page.size(), e.toString());
        throw e instanceof ArchiveException a ? a : new ArchiveException("archive write failed: " + e, e);
      }
      archived += page.size();
      purged += rows.delete(page.stream().map(OutboxEvent::id).toList()); // only now: every sink confirmed the page
      batches++;
      progress.accept(new ArchiveResult(archived, purged, batches));
    } while (page.size() >= batchSize);
    if (archived > 0) {
      LOG.info("outbox table {}: archived {} and purged {} event(s) dispatched more than {} ago, in {} batch(es)",
          rows.table(), archived, purged, olderThan, batches);
    }
    return new ArchiveResult(archived, purged, batches);
  }

  /** Builds an {@link OutboxArchiver}; a store and at least one sink are required. */
  public static final class Builder {
    private DispatchedEvents rows;
    private final List<ArchiveSink> sinks = new ArrayList<>();
    private int batchSize = DEFAULT_BATCH_SIZE;

    private Builder() {}

    /** Required: the store whose table is archived. */
    public Builder store(JdbcOutboxStore store) {
      this.rows = DispatchedEvents.of(store);
      return this;
    }

    /** Required, once or more: every sink must confirm a page before it is deleted. */
    public Builder sink(ArchiveSink sink) {
      sinks.add(Objects.requireNonNull(sink, "sink"));
      return this;
    }

    /** Events per page: read, archived and deleted together (default 1000, at most 10000). */
    public Builder batchSize(int batchSize) {
      this.batchSize = batchSize;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public OutboxArchiver build() {
      if (rows == null) {
        throw new InvalidConfigurationException("store is required: .store(jdbcOutboxStore)");
      }
      if (sinks.isEmpty()) {
        throw new InvalidConfigurationException("at least one sink is required: .sink(JsonLinesArchive…)");
      }
      if (batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
        throw new InvalidConfigurationException("batchSize must be between 1 and " + MAX_BATCH_SIZE
            + ", was " + batchSize);
      }
      return new OutboxArchiver(rows, sinks, batchSize);
    }
  }
}
