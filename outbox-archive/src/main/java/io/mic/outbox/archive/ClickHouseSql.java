package io.mic.outbox.archive;

import java.time.Instant;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The SQL of a ClickHouse archive and its rule for time columns ({@link #timeColumn}), for the archiver and
 * the replay. Identifiers are validated and quoted; the one string value (the topic) is escaped as a
 * literal, and times are rendered by this class from {@link Instant}s. Query parameters
 * ({@code {name:Type}}) would be nicer but older servers (18.x, Debian's package) lack them.
 *
 * <pre>{@code
 * String sql = ClickHouseSql.select(ClickHouseSql.quotedTable("outbox_archive"), TimeColumn.DATETIME,
 *     "order.created", from, to, columns);
 * }</pre>
 */
public final class ClickHouseSql {
  public static final Set<String> REQUIRED_COLUMNS = Set.of("id", "topic", "created_at", "payload");

  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,63}");
  private static final Pattern DATETIME = Pattern.compile("(?:Nullable\\()?DateTime(?:\\('[^']*'\\))?\\)?");
  private static final Pattern DATETIME64_UTC =
      Pattern.compile("(?:Nullable\\()?DateTime64\\(\\d, *'(?:UTC|Etc/UTC)'\\)\\)?");
  public static final String TIME_TYPES = "DateTime (any time zone) or DateTime64(p, 'UTC')";
  /** The range every DateTime64 precision can represent; bounds outside it are clamped. */
  private static final Instant DATETIME64_MIN = Instant.parse("1900-01-01T00:00:00Z");
  private static final Instant DATETIME64_MAX = Instant.parse("2262-04-11T00:00:00Z");
  private static final long DATETIME_MAX_SECONDS = 0xFFFF_FFFFL;

  private ClickHouseSql() {}

  public enum TimeColumn { DATETIME, DATETIME64 }

  /** Validates {@code table} ({@code name} or {@code database.name}) and returns it quoted. */
  public static String quotedTable(String table) {
    String[] parts = table.split("\\.", -1);
    if (parts.length > 2) {
      throw new IllegalArgumentException("'" + table + "' has more than one dot: use table or database.table");
    }
    StringBuilder quoted = new StringBuilder();
    for (String part : parts) {
      if (!IDENTIFIER.matcher(part).matches()) {
        throw new IllegalArgumentException("'" + table + "' is not a valid table name: use letters, digits and"
            + " '_' (not starting with a digit, at most 64), optionally prefixed by a database and a dot,"
            + " e.g. outbox_archive or events.outbox_archive");
      }
      quoted.append(quoted.length() == 0 ? "" : ".").append('`').append(part).append('`');
    }
    return quoted.toString();
  }

  public static String literal(String value) {
    StringBuilder s = new StringBuilder(value.length() + 2).append('\'');
    for (int i = 0; i < value.length(); i++) {
      char c = value.charAt(i);
      switch (c) {
        case '\\' -> s.append("\\\\");
        case '\'' -> s.append("\\'");
        case '\n' -> s.append("\\n");
        case '\r' -> s.append("\\r");
        case '\0' -> s.append("\\0");
        default -> s.append(c);
      }
    }
    return s.append('\'').toString();
  }

  /**
   * The kind of a time column ({@code created_at}, {@code occurred_at}; Nullable or not), or {@code null} when
   * the archive cannot use it. One rule for the writer and the reader: a {@code DateTime} in any time zone
   * (it stores Unix seconds: the archiver sends them as numbers, the replay reads them back with
   * {@code toString(created_at, 'UTC')}); a {@code DateTime64} only in UTC, because its values travel as
   * text, which a column parses in its own zone, where an hour repeats when the clocks go back. A
   * {@code DateTime64} in another zone is changed for free (the zone is metadata):
   * {@code ALTER TABLE t MODIFY COLUMN created_at DateTime64(6, 'UTC')}.
   */
  public static TimeColumn timeColumn(String type) {
    if (DATETIME.matcher(type).matches()) {
      return TimeColumn.DATETIME;
    }
    return DATETIME64_UTC.matcher(type).matches() ? TimeColumn.DATETIME64 : null;
  }

  public static String timeColumnProblem(String column, String table, String type) {
    return "column " + column + " of ClickHouse table " + table + " is " + type + "; expected " + TIME_TYPES
        + (type.contains("DateTime64") ? ": the zone of a DateTime64 is metadata, change it with ALTER TABLE "
            + table + " MODIFY COLUMN " + column + " " + type.replaceFirst("DateTime64\\((\\d).*?\\)", "DateTime64($1, 'UTC')")
            : "");
  }

  public static String describe(String quotedTable) {
    return "DESCRIBE TABLE " + quotedTable + " FORMAT JSONEachRow";
  }

  /**
   * The replay query: selected rows in replay order ({@link ArchiveOrder}), streamed as JSON lines. The id is
   * compared as text (a UUID column would otherwise sort by its internal halves) and the time is returned as
   * UTC text.
   */
  public static String select(String quotedTable, TimeColumn time, String topic, Instant from, Instant to,
      Set<String> columns) {
    return "SELECT toString(id) AS original_id, topic, "
        + optional(columns, "aggregate_type", "NULL") + ", "
        + optional(columns, "aggregate_id", "NULL") + ", "
        + "toString(created_at, 'UTC') AS created_at_utc, payload, "
        + optional(columns, "headers", "''")
        + (columns.contains("sequence") ? ", sequence" : "")
        + (columns.contains("schema_version") ? ", schema_version" : "")
        + (columns.contains("occurred_at") ? ", toString(occurred_at, 'UTC') AS occurred_at_utc" : "")
        + (columns.contains("trace_parent") ? ", trace_parent" : "")
        + " FROM " + quotedTable
        + " WHERE topic = " + literal(topic)
        + " AND created_at >= " + bound(time, from, true)
        + " AND created_at <= " + bound(time, to, false)
        + " ORDER BY " + ArchiveOrder.CLICKHOUSE_ORDER_BY
        + " FORMAT JSONEachRow";
  }

  private static String optional(Set<String> columns, String name, String otherwise) {
    return columns.contains(name) ? name : otherwise + " AS " + name;
  }

  /**
   * A time bound as a ClickHouse expression. DateTime has whole seconds: an inclusive lower bound rounds
   * up and an upper bound rounds down, so {@code 08:00:00.500} never lets {@code 08:00:00} in.
   */
  static String bound(TimeColumn time, Instant instant, boolean lower) {
    if (time == TimeColumn.DATETIME) {
      long seconds = instant.getEpochSecond();
      if (lower && instant.getNano() > 0) {
        seconds++;
      }
      seconds = Math.max(0, Math.min(DATETIME_MAX_SECONDS, seconds));
      return "toDateTime(" + seconds + ")";
    }
    Instant clamped = instant.isBefore(DATETIME64_MIN) ? DATETIME64_MIN
        : instant.isAfter(DATETIME64_MAX) ? DATETIME64_MAX : instant;
    String iso = Timestamps.format(clamped);             // 2026-09-29T08:00:00.123Z
    String fraction = iso.substring(20, iso.length() - 1); // 3, 6 or 9 digits
    return "toDateTime64('" + iso.substring(0, 10) + ' ' + iso.substring(11, 20) + fraction + "', "
        + fraction.length() + ", 'UTC')";
  }
}
