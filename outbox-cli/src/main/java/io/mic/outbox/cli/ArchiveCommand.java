package io.mic.outbox.cli;

import io.mic.outbox.archive.ClickHouseArchive;
import io.mic.outbox.archive.JsonLinesArchive;
import io.mic.outbox.jdbc.OutboxStoreException;
import io.mic.outbox.jdbc.archive.ArchiveResult;
import io.mic.outbox.jdbc.archive.OutboxArchiver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

@Command(name = "archive", sortOptions = false,
    description = {"Copies DISPATCHED events dispatched longer ago than --older-than to JSON Lines files and/or",
        "ClickHouse, then deletes them from the outbox, page by page (a page is deleted only once every sink",
        "has it). The archive is what mic-events-replay reads."})
final class ArchiveCommand implements Callable<Integer> {
  public static final String CLICKHOUSE_PASSWORD_ENV = "MIC_OUTBOX_CLICKHOUSE_PASSWORD";

  @ParentCommand
  private MicOutbox root;

  @Option(names = "--older-than", paramLabel = "DURATION", required = true, converter = Durations.class,
      description = "archive events dispatched longer ago than this, e.g. 7d")
  private Duration olderThan;

  @Option(names = "--to-dir", paramLabel = "DIR", description = "write JSON Lines files (gzip) into this directory")
  private Path directory;

  @Option(names = "--clickhouse-url", paramLabel = "URL", description = "ClickHouse HTTP URL, e.g. http://127.0.0.1:8123")
  private String clickHouseUrl;

  @Option(names = "--clickhouse-table", paramLabel = "NAME", defaultValue = ClickHouseArchive.DEFAULT_TABLE,
      description = "ClickHouse table, created if missing (default: ${DEFAULT-VALUE})")
  private String clickHouseTable;

  @Option(names = "--clickhouse-user", paramLabel = "NAME",
      description = "ClickHouse user; the password comes from " + CLICKHOUSE_PASSWORD_ENV)
  private String clickHouseUser;

  @Option(names = "--batch-size", paramLabel = "N", defaultValue = "" + OutboxArchiver.DEFAULT_BATCH_SIZE,
      description = "events per page (default: ${DEFAULT-VALUE})")
  private int batchSize;

  @Option(names = "--progress-interval", paramLabel = "DURATION", converter = Durations.class, defaultValue = "10s",
      description = "at most one progress line on stderr per interval, 0s for one per batch (default: ${DEFAULT-VALUE})")
  private Duration progressInterval;

  @Mixin
  private JsonFlag jsonFlag;

  @Override
  public Integer call() {
    if (directory == null && clickHouseUrl == null) {
      throw new UsageException("archive needs a sink: --to-dir DIR and/or --clickhouse-url URL");
    }
    if (clickHouseUrl == null && (clickHouseUser != null
        || !ClickHouseArchive.DEFAULT_TABLE.equals(clickHouseTable))) {
      throw new UsageException("--clickhouse-table and --clickhouse-user need --clickhouse-url URL");
    }
    if (progressInterval.isNegative()) {
      throw new UsageException("--progress-interval must be >= 0, was " + Durations.format(progressInterval));
    }
    Database db = root.database();
    OutboxArchiver.Builder archiver = OutboxArchiver.builder().store(db.store()).batchSize(batchSize);
    if (directory != null) {
      archiver.sink(JsonLinesArchive.builder().directory(directory).build());
    }
    if (clickHouseUrl != null) {
      ClickHouseArchive.Builder ch = ClickHouseArchive.builder().url(clickHouseUrl).table(clickHouseTable);
      if (clickHouseUser != null) {
        ch.credentials(clickHouseUser, root.env.getOrDefault(CLICKHOUSE_PASSWORD_ENV, ""));
      }
      ClickHouseArchive sink = ch.build();
      sink.createTable();
      archiver.sink(sink);
    }
    root.err.println("archiving events dispatched more than " + Durations.format(olderThan) + " ago, "
        + batchSize + " per page …");
    ArchiveResult result;
    try {
      Progress progress = new Progress(root.err, "archive", progressInterval);
      result = archiver.build().archiveAndPurge(olderThan, soFar -> progress.update(soFar.archived(),
          " archived, " + soFar.purged() + " purged, " + soFar.batches() + " page(s)"));
    } catch (OutboxStoreException e) {
      throw db.failed("archive dispatched events", e);
    }
    if (root.json || jsonFlag.json) {
      try (Json j = new Json(root.out)) {
        j.begin().field("archived", result.archived()).field("purged", result.purged())
            .field("batches", result.batches()).end();
      }
    } else {
      root.out.println("archived: " + result.archived() + " event(s), purged " + result.purged() + ", in "
          + result.batches() + " batch(es)");
    }
    return MicOutbox.OK;
  }
}
