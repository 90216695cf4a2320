package io.mic.outbox.archive;

import com.fasterxml.jackson.core.JsonGenerator;
import io.mic.outbox.ArchiveException;
import io.mic.outbox.OutboxEvent;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Writes events into a ClickHouse archive table ({@code INSERT … FORMAT JSONEachRow}) in the layout
 * {@link ClickHouseSql#select} reads, after checking once that the table takes what is written: the
 * columns the replay needs, text columns where text goes, and a time type of {@link ClickHouseSql#timeColumn}.
 * The envelope's columns are written where the table has them. Thread-safe.
 */
final class ClickHouseWriter {
  private static final String STRING = "(?:LowCardinality\\()?(?:Nullable\\()?String\\)?\\)?";
  private static final Pattern INTEGER = Pattern.compile("(?:Nullable\\()?U?Int(?:8|16|32|64)\\)?");
  /** The columns the archive writes text into, and the types that take it. */
  private static final Map<String, Pattern> TEXT_COLUMNS = new LinkedHashMap<>();

  static {
    TEXT_COLUMNS.put("id", Pattern.compile(STRING + "|(?:Nullable\\()?UUID\\)?"));
    for (String name : List.of("topic", "aggregate_type", "aggregate_id", "payload", "headers")) {
      TEXT_COLUMNS.put(name, Pattern.compile(STRING));
    }
  }

  private final ClickHouseHttp http;
  private final String table;
  private final String quotedTable;
  private volatile Layout layout;

  private record Layout(boolean dateTime64, Set<String> envelope) {}

  /** @param table {@code name} or {@code database.name} */
  public ClickHouseWriter(ClickHouseHttp http, String table) {
    this.http = http;
    this.table = table;
    this.quotedTable = ClickHouseSql.quotedTable(table);
  }

  /**
   * Creates the table if it does not exist: {@code MergeTree}, partitioned by month, ordered by
   * {@code (topic, created_at, id)} as the replay reads it; {@code DateTime64(6, 'UTC')} where the server
   * has it (20.1 and later), else {@code DateTime('UTC')}.
   *
   * @return the time type of the table's columns
   */
  public String createTable() throws InterruptedException {
    String version = http.execute("SELECT version()", "the server version").trim();
    String time = majorVersion(version) >= 20 ? "DateTime64(6, 'UTC')" : "DateTime('UTC')";
    http.execute("CREATE TABLE IF NOT EXISTS " + quotedTable + " (id String, topic String,"
        + " aggregate_type Nullable(String), aggregate_id Nullable(String), created_at " + time + ","
        + " payload String, headers String, sequence UInt64 DEFAULT 0, schema_version UInt32 DEFAULT 1,"
        + " occurred_at Nullable(" + time + "), trace_parent Nullable(String)) ENGINE = MergeTree"
        + " PARTITION BY toYYYYMM(created_at) ORDER BY (topic, created_at, id)", "the creation of table " + table);
    layout = null;
    return time + " (server " + version + ")";
  }

  static int majorVersion(String version) {
    try {
      return Integer.parseInt(version.split("\\.")[0]);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  public void insert(List<OutboxEvent> events) throws InterruptedException {
    if (events.isEmpty()) {
      return;
    }
    Layout l = layout();
    ByteArrayOutputStream body = new ByteArrayOutputStream(events.size() * 256);
    try (JsonGenerator g = JsonText.FACTORY.createGenerator(body)) {
      for (OutboxEvent e : events) {
        ArchiveRecords.writeClickHouseRow(g, e, l.dateTime64, l.envelope);
        g.writeRaw('\n');
      }
    } catch (IOException e) {
      throw new ArchiveException("cannot encode events for ClickHouse: " + e, e);
    }
    http.insert("INSERT INTO " + quotedTable + " FORMAT JSONEachRow", body.toByteArray(),
        "the insert of " + events.size() + " event(s) into table " + table);
  }

  private Layout layout() throws InterruptedException {
    Layout known = layout;
    if (known != null) {
      return known;
    }
    Map<String, String> columns = http.columns(quotedTable, table);
    for (String required : List.of("id", "topic", "aggregate_type", "aggregate_id", "created_at", "payload",
        "headers")) {
      if (!columns.containsKey(required)) {
        throw new ArchiveException("ClickHouse table " + table + " has no column '" + required
            + "': create it with ClickHouseArchive.createTable()");
      }
    }
    // a wrong type fails the insert with an answer that quotes the rows (payloads): refuse it before
    for (Map.Entry<String, Pattern> text : TEXT_COLUMNS.entrySet()) {
      String name = text.getKey();
      if (!text.getValue().matcher(columns.get(name)).matches()) {
        throw new ArchiveException("column " + name + " of ClickHouse table " + table + " is "
            + columns.get(name) + "; expected " + (name.equals("id") ? "String or UUID" : "String")
            + " (the archive writes " + (name.equals("payload") || name.equals("headers") ? "JSON text" : "text")
            + " there): alter the column, or create the table with ClickHouseArchive.createTable()");
      }
    }
    ClickHouseSql.TimeColumn time = ClickHouseSql.timeColumn(columns.get("created_at"));
    if (time == null) {
      throw new ArchiveException(ClickHouseSql.timeColumnProblem("created_at", table, columns.get("created_at")));
    }
    Layout l = new Layout(time == ClickHouseSql.TimeColumn.DATETIME64, envelopeColumns(columns, time));
    layout = l;
    return l;
  }

  /**
   * The envelope's columns of the table, each checked to take what the archive writes there: an integer
   * for {@code sequence} and {@code schema_version}, the time type of {@code created_at} (possibly Nullable)
   * for {@code occurred_at}, a String for {@code trace_parent}. Absent ones are left out of the rows.
   */
  private Set<String> envelopeColumns(Map<String, String> columns, ClickHouseSql.TimeColumn created) {
    Map<String, Pattern> expected = new LinkedHashMap<>();
    expected.put("sequence", INTEGER);
    expected.put("schema_version", INTEGER);
    expected.put("trace_parent", Pattern.compile(STRING));
    Set<String> present = new LinkedHashSet<>();
    for (Map.Entry<String, Pattern> column : expected.entrySet()) {
      String type = columns.get(column.getKey());
      if (type == null) {
        continue;
      }
      if (!column.getValue().matcher(type).matches()) {
        throw new ArchiveException("column " + column.getKey() + " of ClickHouse table " + table + " is "
            + type + "; expected " + (column.getKey().equals("trace_parent") ? "String"
            : "an integer type such as UInt64") + ": alter the column, or drop it to archive without it");
      }
      present.add(column.getKey());
    }
    String occurred = columns.get("occurred_at");
    if (occurred != null) {
      ClickHouseSql.TimeColumn time = ClickHouseSql.timeColumn(occurred.replaceFirst("^Nullable\\((.*)\\)$", "$1"));
      if (time == null) {
        throw new ArchiveException(ClickHouseSql.timeColumnProblem("occurred_at", table, occurred)
            + ", or drop it to archive without it");
      }
      if (time != created) {
        throw new ArchiveException("column occurred_at of ClickHouse table " + table + " is " + occurred
            + " but created_at is " + columns.get("created_at") + "; give both the same time type");
      }
      present.add("occurred_at");
    }
    return Set.copyOf(present);
  }

  @Override
  public String toString() {
    return "ClickHouse table " + table + " at " + http.uri();
  }
}
