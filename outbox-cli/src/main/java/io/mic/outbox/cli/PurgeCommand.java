package io.mic.outbox.cli;

import io.mic.outbox.jdbc.OutboxMaintenance;
import io.mic.outbox.jdbc.OutboxStoreException;
import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "purge", sortOptions = false,
    description = {"Deletes DISPATCHED events dispatched longer ago than --older-than, in short batches.",
        "PENDING, PROCESSING and DLQ events are never touched. Use archive to keep a copy first."})
final class PurgeCommand extends OutboxCommand {
  @Option(names = "--older-than", paramLabel = "DURATION", required = true, converter = Durations.class,
      description = "retention, e.g. 7d or 12h; 0s purges every dispatched event")
  private Duration olderThan;

  @Option(names = "--batch-size", paramLabel = "N", defaultValue = "" + OutboxMaintenance.DEFAULT_BATCH_SIZE,
      description = "rows per delete statement (default: ${DEFAULT-VALUE})")
  private int batchSize;

  @Mixin
  private ProgressInterval progressInterval;

  @Override
  public Integer call() {
    if (olderThan.isNegative()) {
      throw new UsageException("--older-than must be >= 0 (0s: every dispatched event), was "
          + Durations.format(olderThan));
    }
    progressInterval.check();
    Database db = database();
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(db.store()).batchSize(batchSize).build();
    err().println("purging events dispatched more than " + Durations.format(olderThan) + " ago …");
    long purged;
    try {
      Progress progress = progressInterval.start(err(), "purge");
      purged = maintenance.purgeDispatchedOlderThan(olderThan, soFar -> progress.update(soFar, " deleted"));
    } catch (OutboxStoreException e) {
      throw db.failed("purge dispatched events", e);
    }
    print("purged", purged, "purged: " + purged + " dispatched event(s) older than " + Durations.format(olderThan));
    return MicOutbox.OK;
  }
}
