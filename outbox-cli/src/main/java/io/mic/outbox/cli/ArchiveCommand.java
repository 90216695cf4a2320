package io.mic.outbox.cli;

import io.mic.outbox.archive.ClickHouseArchive;
import io.mic.outbox.archive.JsonLinesArchive;
import io.mic.outbox.jdbc.OutboxStoreException;
import io.mic.outbox.jdbc.archive.ArchiveResult;
import io.mic.outbox.jdbc.archive.OutboxArchiver;
import java.nio.file.Path;
import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

@Command(name = "archive", sortOptions = false,
    description = {"Copies DISPATCHED events dispatched longer ago than --older-than to JSON Lines files and/or",
        "ClickHouse, then deletes them from the outbox, page by page (a page is deleted only once every sink",
        "has it). The archive is what mic-events-replay reads."})
final class ArchiveCommand extends OutboxCommand {
  public static final String CLICKHOUSE_PASSWORD_ENV = "MIC_OUTBOX_CLICKHOUSE_PASSWORD";

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

  @Mixin
  private ProgressInterval progressInterval;

  @Override
  public Integer call() {
    if (directory == null && clickHouseUrl == null) {
      throw new UsageException("archive needs a sink: --to-dir DIR and/or --clickhouse-url URL");
    }
    if (clickHouseUrl == null && (clickHouseUser != null
        || !ClickHouseArchive.DEFAULT_TABLE.equals(clickHouseTable))) {
      throw new UsageException("--clickhouse-table and --clickhouse-user need --clickhouse-url URL");
    }
    progressInterval.check();
    Database db = database();
    OutboxArchiver.Builder archiver = OutboxArchiver.builder().store(db.store()).batchSize(batchSize);
    if (directory != null) {
      archiver.sink(JsonLinesArchive.builder().directory(directory).build());
    }
    if (clickHouseUrl != null) {
      ClickHouseArchive.Builder ch = ClickHouseArchive.builder().url(clickHouseUrl).table(clickHouseTable);
      if (clickHouseUser != null) {
        ch.credentials(clickHouseUser, root().env.getOrDefault(CLICKHOUSE_PASSWORD_ENV, ""));
      }
      ClickHouseArchive sink = ch.build();
      sink.createTable();
      archiver.sink(sink);
    }
    err().println("archiving events dispatched more than " + Durations.format(olderThan) + " ago, "
        + batchSize + " per page …");
    ArchiveResult result;
    try {
      Progress progress = progressInterval.start(err(), "archive");
      result = archiver.build().archiveAndPurge(olderThan, soFar -> progress.update(soFar.archived(),
          " archived, " + soFar.purged() + " purged, " + soFar.batches() + " page(s)"));
    } catch (OutboxStoreException e) {
      throw db.failed("archive dispatched events", e);
    }
    print(j -> j.begin().field("archived", result.archived()).field("purged", result.purged())
        .field("batches", result.batches()).end(), "archived: " + result.archived() + " event(s), purged "
        + result.purged() + ", in " + result.batches() + " batch(es)");
    return MicOutbox.OK;
  }
}
