package io.mic.replay;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import io.mic.outbox.ArchiveException;
import io.mic.outbox.archive.ArchiveOrder;
import io.mic.outbox.archive.ArchivedEvent;
import io.mic.outbox.archive.ClickHouseConnectionBuilder;
import io.mic.outbox.archive.ClickHouseHttp;
import io.mic.outbox.archive.ClickHouseSql;
import io.mic.outbox.archive.JsonText;
import io.mic.outbox.archive.RecordParser;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.TreeSet;

/**
 * A ClickHouse table as archive, read over the HTTP interface (port 8123). Columns: {@code id},
 * {@code topic}, {@code created_at} ({@code DateTime} in any time zone, or {@code DateTime64(p, 'UTC')}:
 * the rule the archiver writes by, {@link ClickHouseSql#timeColumn}), {@code payload} (JSON text in a {@code String}), and optionally
 * {@code aggregate_type}, {@code aggregate_id}, {@code headers} (a JSON object as text).
 *
 * <pre>{@code
 * ReplaySource source = ClickHouseArchiveSource.builder()
 *     .url("http://clickhouse.svc:8123")
 *     .table("outbox_archive")
 *     .credentials(System.getenv("CLICKHOUSE_USER"), System.getenv("CLICKHOUSE_PASSWORD"))
 *     .build();
 * }</pre>
 *
 * <p>The topic filter, the time range and {@code ORDER BY created_at, id} run in ClickHouse; rows are
 * streamed ({@code FORMAT JSONEachRow}), so memory does not grow with the table. The table name is
 * validated and quoted, the topic escaped. A {@code DateTime} column has whole seconds: the range is
 * rounded inwards ({@code --from 08:00:00.5} starts at 08:00:01).
 *
 * <p>Before a publication (not for a dry run) the query runs twice: the first pass checks every selected
 * row against the sink, so an event the destination cannot take stops the replay with nothing published;
 * the second pass publishes. The archive is immutable, so both passes see the same rows.
 */
public final class ClickHouseArchiveSource implements ReplaySource {
  public static final String DEFAULT_TABLE = ClickHouseConnectionBuilder.DEFAULT_TABLE;
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(10);
  public static final Duration DEFAULT_QUERY_TIMEOUT = Duration.ofMinutes(10);

  private static final String CREDENTIALS = "--clickhouse-user/--clickhouse-password or"
      + " CLICKHOUSE_USER/CLICKHOUSE_PASSWORD";

  private final String table;
  private final String quotedTable;
  private final ClickHouseHttp http;

  private ClickHouseArchiveSource(ClickHouseHttp http, String table, String quotedTable) {
    this.table = table;
    this.quotedTable = quotedTable;
    this.http = http;
  }

  public static Builder builder() {
    return new Builder();
  }

  @Override
  public ReplayCursor open(ReplayQuery query, ReplayProgress progress, EventCheck check) {
    Objects.requireNonNull(query, "query");
    Objects.requireNonNull(check, "check");
    try {
      Map<String, String> columns = http.columns(quotedTable, table);
      for (String required : new TreeSet<>(ClickHouseSql.REQUIRED_COLUMNS)) {
        if (!columns.containsKey(required)) {
          throw new ReplayInputException("ClickHouse table " + table + " has no column '" + required
              + "': an archive needs id, topic, created_at and payload (and may have aggregate_type,"
              + " aggregate_id, headers)");
        }
      }
      ClickHouseSql.TimeColumn time = ClickHouseSql.timeColumn(columns.get("created_at"));
      if (time == null) {
        throw new ReplayInputException(ClickHouseSql.timeColumnProblem("created_at", table, columns.get("created_at")));
      }
      String sql = ClickHouseSql.select(quotedTable, time, query.topic(), query.from(), query.to(),
          columns.keySet());
      if (check != EventCheck.NONE) {
        // the rows are streamed, not stored: a first pass checks them all before anything is published
        try (RowCursor rows = new RowCursor(http.query(sql, "the check of the selected rows"), ReplayProgress.NONE,
            check)) {
          while (rows.next() != null) {
            // each row is checked as it is read
          }
        }
      }
      return new RowCursor(http.query(sql, "the replay query"), progress, check);
    } catch (ArchiveException e) {
      throw new ReplayInputException(e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ReplayInputException("interrupted while querying ClickHouse", e);
    }
  }

  @Override
  public String toString() {
    return "ClickHouse table " + table + " at " + http.uri();
  }

  /** Rows as they stream in; checks the order ClickHouse promised, as the replay relies on it. */
  private final class RowCursor implements ReplayCursor {
    private final InputStream body;
    private final BufferedReader reader;
    private final ReplayProgress progress;
    private final EventCheck check;
    private ArchivedEvent previous;
    private long rows;

    RowCursor(InputStream body, ReplayProgress progress, EventCheck check) {
      this.check = check;
      this.body = body;
      this.reader = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8), 1 << 16);
      this.progress = progress;
    }

    @Override
    public ArchivedEvent next() {
      String line;
      try {
        line = reader.readLine();
      } catch (IOException e) {
        throw new ReplayInputException("the ClickHouse result broke off after " + rows + " rows: " + e, e);
      }
      if (line == null) {
        progress.read(rows, rows);
        return null;
      }
      rows++;
      if (!line.startsWith("{")) {
        // ClickHouse reports an error that happens mid-stream as plain text after the rows it sent
        throw new ReplayInputException("ClickHouse failed after " + (rows - 1) + " rows of table " + table
            + ": " + line);
      }
      ArchivedEvent event = parse(line);
      if (previous != null && ArchiveOrder.EVENTS.compare(previous, event) > 0) {
        throw new ReplayInputException("ClickHouse row " + rows + " of table " + table + " (id " + event.id()
            + ") is out of (created_at, id) order: the replay order cannot be guaranteed");
      }
      previous = event;
      try {
        check.check(event);
      } catch (UnpublishableEventException bad) {
        throw bad.at("ClickHouse table " + table + " row " + rows);
      }
      if ((rows & 0xFFF) == 0) {
        progress.read(rows, rows);
      }
      return event;
    }

    private ArchivedEvent parse(String line) {
      try (JsonParser p = JsonText.FACTORY.createParser(line)) {
        p.nextToken();
        return RecordParser.CLICKHOUSE.read(p);
      } catch (RecordParser.BadRecordException e) {
        throw new ReplayInputException("ClickHouse table " + table + " row " + rows + ": " + e.getMessage());
      } catch (IOException e) {
        String problem = e instanceof JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
        throw new ReplayInputException("ClickHouse table " + table + " row " + rows + " is not JSON: "
            + JsonText.withoutInput(problem)); // never a payload's text
      }
    }

    @Override
    public void close() {
      try {
        body.close();
      } catch (IOException e) {
        // closing aborts the transfer; there is nothing to keep
      }
    }
  }

  /** Options named as on the archive sink ({@link ClickHouseConnectionBuilder}). */
  public static final class Builder extends ClickHouseConnectionBuilder<Builder> {
    private Builder() {
      super(DEFAULT_CONNECT_TIMEOUT, DEFAULT_QUERY_TIMEOUT);
    }

    @Override
    protected RuntimeException invalid(String option, String message) {
      return new ReplayConfigurationException(option, message);
    }

    public ClickHouseArchiveSource build() {
      ClickHouseHttp http = connect(CREDENTIALS);
      return new ClickHouseArchiveSource(http, table(), ClickHouseSql.quotedTable(table()));
    }
  }
}
