package io.mic.outbox.archive;

import io.mic.outbox.ArchiveException;
import io.mic.outbox.ArchiveSink;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ClickHouse table as archive, written over the HTTP interface ({@code INSERT … FORMAT JSONEachRow}) in
 * the layout {@code mic-events-replay --from-clickhouse} reads: columns {@code id}, {@code topic},
 * {@code aggregate_type}, {@code aggregate_id}, {@code created_at}, {@code payload} (JSON text),
 * {@code headers} (a JSON object as text). {@link #createTable()} creates it.
 *
 * <p>{@code created_at}: a {@code DateTime} in any time zone or a {@code DateTime64} in UTC, the rule the
 * replay applies too ({@link ClickHouseSql#timeColumn}). {@link #createTable()} makes it
 * {@code DateTime64(6, 'UTC')} where the server has it (ClickHouse 20.1 and later); older servers (18.x, Debian's package) only have {@code DateTime}, whole seconds: the sub-second part of
 * {@code created_at} is then lost in this archive, and events of the same second replay in id order
 * (deterministic, but not necessarily creation order). Use the JSON Lines archive as well where that matters.
 *
 * <p>One {@link #archive} call is one {@code INSERT}; it returns once ClickHouse answered 200, i.e. the
 * block is written. MergeTree does not deduplicate: an event archived twice (a crash between the archive
 * and the purge) is stored twice; the replay returns both copies next to each other (same created_at and
 * id), consumers deduplicate by the original id. Credentials go in the {@code X-ClickHouse-User} /
 * {@code X-ClickHouse-Key} headers and are never logged.
 */
public final class ClickHouseArchive implements ArchiveSink {
  public static final String DEFAULT_TABLE = ClickHouseConnectionBuilder.DEFAULT_TABLE;
  /** Connecting, and each insert's answer: 30 s each. */
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(30);
  public static final Duration DEFAULT_QUERY_TIMEOUT = Duration.ofSeconds(30);

  private static final Logger LOG = LoggerFactory.getLogger(ClickHouseArchive.class);
  private static final String CREDENTIALS = ".credentials(user, password)";

  private final String table;
  private final ClickHouseWriter writer;

  private ClickHouseArchive(String table, ClickHouseWriter writer) {
    this.table = table;
    this.writer = writer;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Creates the table if it does not exist: {@code MergeTree}, partitioned by month, ordered by
   * {@code (topic, created_at, id)} as the replay reads it.
   */
  public void createTable() {
    String time = call(writer::createTable);
    LOG.info("ClickHouse archive table {} ready (created_at {})", table, time);
  }

  @Override
  public void archive(List<OutboxEvent> events) {
    if (events.isEmpty()) {
      return;
    }
    call(() -> {
      writer.insert(events);
      return null;
    });
    LOG.debug("archived {} event(s) to ClickHouse table {}", events.size(), table);
  }

  private interface Call<T> {
    T run() throws InterruptedException;
  }

  private <T> T call(Call<T> call) {
    try {
      return call.run();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ArchiveException("interrupted while writing to " + writer, e);
    }
  }

  @Override
  public String toString() {
    return writer.toString();
  }

  /** Options named as on the replay's source ({@link ClickHouseConnectionBuilder}). */
  public static final class Builder extends ClickHouseConnectionBuilder<Builder> {
    private Builder() {
      super(DEFAULT_CONNECT_TIMEOUT, DEFAULT_QUERY_TIMEOUT);
    }

    @Override
    protected RuntimeException invalid(String option, String message) {
      return new InvalidConfigurationException(message);
    }

    public ClickHouseArchive build() {
      ClickHouseHttp http = connect(CREDENTIALS);
      return new ClickHouseArchive(table(), new ClickHouseWriter(http, table()));
    }
  }
}
