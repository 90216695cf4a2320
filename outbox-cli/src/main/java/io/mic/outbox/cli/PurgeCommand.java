package io.mic.outbox.cli;

import io.mic.outbox.jdbc.OutboxMaintenance;
import io.mic.outbox.jdbc.OutboxStoreException;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

@Command(name = "purge", sortOptions = false,
    description = {"Deletes DISPATCHED events dispatched longer ago than --older-than, in short batches.",
        "PENDING, PROCESSING and DLQ events are never touched. Use archive to keep a copy first."})
final class PurgeCommand implements Callable<Integer> {
  @ParentCommand
  private MicOutbox root;

  @Option(names = "--older-than", paramLabel = "DURATION", required = true, converter = Durations.class,
      description = "retention, e.g. 7d or 12h")
  private Duration olderThan;

  @Option(names = "--batch-size", paramLabel = "N", defaultValue = "" + OutboxMaintenance.DEFAULT_BATCH_SIZE,
      description = "rows per delete statement (default: ${DEFAULT-VALUE})")
  private int batchSize;

  @Option(names = "--progress-interval", paramLabel = "DURATION", converter = Durations.class, defaultValue = "10s",
      description = "at most one progress line on stderr per interval, 0s for one per batch (default: ${DEFAULT-VALUE})")
  private Duration progressInterval;

  @Mixin
  private JsonFlag jsonFlag;

  @Override
  public Integer call() {
    if (olderThan.isNegative() || olderThan.isZero()) {
      throw new UsageException("--older-than must be > 0, was " + Durations.format(olderThan));
    }
    if (progressInterval.isNegative()) {
      throw new UsageException("--progress-interval must be >= 0, was " + Durations.format(progressInterval));
    }
    Database db = root.database();
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(db.store()).batchSize(batchSize).build();
    root.err.println("purging events dispatched more than " + Durations.format(olderThan) + " ago …");
    long purged;
    try {
      Progress progress = new Progress(root.err, "purge", progressInterval);
      purged = maintenance.purgeDispatchedOlderThan(olderThan, soFar -> progress.update(soFar, " deleted"));
    } catch (OutboxStoreException e) {
      throw db.failed("purge dispatched events", e);
    }
    if (root.json || jsonFlag.json) {
      try (Json j = new Json(root.out)) {
        j.begin().field("purged", purged).end();
      }
    } else {
      root.out.println("purged: " + purged + " dispatched event(s) older than " + Durations.format(olderThan));
    }
    return MicOutbox.OK;
  }
}
