package io.mic.outbox.archive;

import io.mic.outbox.ArchiveException;
import io.mic.outbox.ArchiveSink;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ClickHouse table as archive, written over the HTTP interface ({@code INSERT … FORMAT JSONEachRow}) in
 * the layout {@code mic-events-replay --from-clickhouse} reads: columns {@code id}, {@code topic},
 * {@code aggregate_type}, {@code aggregate_id}, {@code created_at}, {@code payload} (JSON text),
 * {@code headers} (a JSON object as text). {@link #createTable()} creates it. The format and the client
 * live in {@code outbox-archive} ({@link ClickHouseWriter}), shared with the replay.
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
  public static final String DEFAULT_TABLE = "outbox_archive";

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

  /** Options of a {@link ClickHouseArchive}; {@link #build()} validates them. */
  public static final class Builder {
    private String url;
    private String table = DEFAULT_TABLE;
    private String user;
    private String password;
    private Duration timeout = Duration.ofSeconds(30);

    private Builder() {}

    /** Required: the HTTP interface, e.g. {@code http://clickhouse.svc:8123}; no credentials in it. */
    public Builder url(String url) {
      this.url = url;
      return this;
    }

    /** The table, {@code name} or {@code database.name} (default {@code outbox_archive}). */
    public Builder table(String table) {
      this.table = table;
      return this;
    }

    /** The ClickHouse user and password; {@code null} user: the server's default user. Never logged. */
    public Builder credentials(String user, String password) {
      this.user = user;
      this.password = password;
      return this;
    }

    /** Connect and request timeout (default 30 s). */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /**
     * The URL follows the replay's rules ({@link ClickHouseUrl}): a message shows at most its host and port.
     *
     * @throws InvalidConfigurationException naming the option that is wrong
     */
    public ClickHouseArchive build() {
      URI uri;
      try {
        uri = ClickHouseUrl.parse(url, CREDENTIALS);
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationException(e.getMessage());
      }
      if (table == null) {
        throw new InvalidConfigurationException("table is required, e.g. outbox_archive");
      }
      try {
        ClickHouseHttp.checkCredentials(user, password);
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationException(e.getMessage());
      }
      if (timeout == null || timeout.isNegative() || timeout.isZero()) {
        throw new InvalidConfigurationException("timeout must be > 0, was " + timeout);
      }
      ClickHouseHttp http = new ClickHouseHttp(uri, user, password, timeout, timeout, CREDENTIALS);
      try {
        return new ClickHouseArchive(table, new ClickHouseWriter(http, table));
      } catch (IllegalArgumentException e) {
        throw new InvalidConfigurationException("table " + e.getMessage());
      }
    }
  }
}
