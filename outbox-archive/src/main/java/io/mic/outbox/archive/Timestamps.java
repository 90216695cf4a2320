package io.mic.outbox.archive;

import java.time.DateTimeException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeFormatterBuilder;
import java.time.format.DateTimeParseException;
import java.time.format.ResolverStyle;
import java.time.temporal.ChronoField;

/** ISO-8601 instants in, UTC out; the archive's time texts (JSON records, ClickHouse, file names). */
public final class Timestamps {
  /** Extended ({@code +02:00}) or basic ({@code +0200}, {@code +02}) offset, or {@code Z}. */
  private static final DateTimeFormatter WITH_OFFSET = new DateTimeFormatterBuilder()
      .parseCaseInsensitive()
      .append(DateTimeFormatter.ISO_LOCAL_DATE_TIME)
      .optionalStart().appendOffset("+HH:MM:ss", "Z").optionalEnd()
      .optionalStart().appendOffset("+HHmm", "Z").optionalEnd()
      .optionalStart().appendOffset("+HH", "Z").optionalEnd()
      .toFormatter().withResolverStyle(ResolverStyle.STRICT); // 2026-02-30 is refused, not clamped to the 28th

  /** ClickHouse's text form of a DateTime or DateTime64 in UTC: {@code 2026-09-29 08:00:00[.123]}. */
  private static final DateTimeFormatter CLICKHOUSE = new DateTimeFormatterBuilder()
      .appendPattern("uuuu-MM-dd HH:mm:ss")
      .optionalStart().appendFraction(ChronoField.NANO_OF_SECOND, 0, 9, true).optionalEnd()
      .toFormatter().withResolverStyle(ResolverStyle.STRICT);

  private Timestamps() {}

  /** Parses an ISO-8601 date-time with an offset ({@code 2026-09-29T10:00:00.5+02:00}). */
  public static Instant parse(String text) {
    Instant fast = parseCommonForm(text);
    if (fast != null) {
      return fast;
    }
    try {
      var parsed = WITH_OFFSET.parse(text.trim());
      if (!parsed.isSupported(ChronoField.OFFSET_SECONDS)) {
        throw new IllegalArgumentException("'" + text + "' has no offset: add Z or an offset such as +02:00,"
            + " e.g. 2026-09-29T08:00:00Z");
      }
      return OffsetDateTime.from(parsed).toInstant();
    } catch (DateTimeParseException e) {
      if (e.getCause() instanceof DateTimeException impossible) {
        // well-formed, but no such day or time: 2026-02-30, 2026-02-29, 24:00
        throw new IllegalArgumentException("'" + text + "' is not a valid date-time: " + impossible.getMessage(), e);
      }
      throw new IllegalArgumentException("'" + text + "' is not an ISO-8601 date-time with an offset,"
          + " e.g. 2026-09-29T08:00:00Z or 2026-09-29T10:00:00.123+02:00", e);
    } catch (DateTimeException e) {
      throw new IllegalArgumentException("'" + text + "' is not a valid date-time: " + e.getMessage(), e);
    }
  }

  /**
   * {@code yyyy-MM-ddTHH:mm:ss[.fraction](Z|+HH:MM)} without the formatter, which costs several
   * microseconds a record on a multi-million-record archive; {@code null} for any other form (the
   * formatter then parses it or explains what is wrong).
   */
  static Instant parseCommonForm(String s) {
    int n = s.length();
    if (n < 20 || s.charAt(4) != '-' || s.charAt(7) != '-' || (s.charAt(10) != 'T' && s.charAt(10) != 't')
        || s.charAt(13) != ':' || s.charAt(16) != ':') {
      return null;
    }
    int year = digits(s, 0, 4);
    int month = digits(s, 5, 2);
    int day = digits(s, 8, 2);
    int hour = digits(s, 11, 2);
    int minute = digits(s, 14, 2);
    int second = digits(s, 17, 2);
    if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) {
      return null;
    }
    int i = 19;
    int nanos = 0;
    if (s.charAt(i) == '.') {
      int start = ++i;
      while (i < n && s.charAt(i) >= '0' && s.charAt(i) <= '9') {
        i++;
      }
      int length = i - start;
      if (length == 0 || length > 9) {
        return null;
      }
      nanos = digits(s, start, length);
      for (int k = length; k < 9; k++) {
        nanos *= 10;
      }
    }
    int offset;
    if (i == n - 1 && (s.charAt(i) == 'Z' || s.charAt(i) == 'z')) {
      offset = 0;
    } else if (i == n - 6 && (s.charAt(i) == '+' || s.charAt(i) == '-') && s.charAt(i + 3) == ':') {
      int hh = digits(s, i + 1, 2);
      int mm = digits(s, i + 4, 2);
      if (hh < 0 || mm < 0 || hh > 18 || mm > 59) {
        return null;
      }
      offset = (s.charAt(i) == '-' ? -1 : 1) * (hh * 3600 + mm * 60);
    } else {
      return null;
    }
    try {
      return LocalDateTime.of(year, month, day, hour, minute, second, nanos)
          .toInstant(ZoneOffset.ofTotalSeconds(offset));
    } catch (DateTimeException e) {
      return null;
    }
  }

  private static int digits(String s, int from, int count) {
    int value = 0;
    for (int i = from; i < from + count; i++) {
      char c = s.charAt(i);
      if (c < '0' || c > '9') {
        return -1;
      }
      value = value * 10 + (c - '0');
    }
    return value;
  }

  public static Instant parseClickHouseUtc(String text) {
    try {
      return LocalDateTime.parse(text, CLICKHOUSE).toInstant(ZoneOffset.UTC);
    } catch (DateTimeParseException e) {
      throw new IllegalArgumentException("'" + text + "' is not a ClickHouse date-time", e);
    }
  }

  /** UTC with as many fraction digits as needed in groups of three: {@code 2026-09-29T08:00:00.120Z}. */
  public static String format(Instant instant) {
    String iso = DateTimeFormatter.ISO_INSTANT.format(instant); // no fraction at all for a whole second
    return instant.getNano() == 0 ? iso.substring(0, iso.length() - 1) + ".000Z" : iso;
  }

  /** {@code 2026-09-29 08:00:00.123456} in UTC, the text a {@code DateTime64(6, 'UTC')} column parses. */
  public static String clickHouseText(Instant instant) {
    String iso = format(instant.truncatedTo(java.time.temporal.ChronoUnit.MICROS));
    String micros = (iso.substring(20, iso.length() - 1) + "000").substring(0, 6);
    return iso.substring(0, 10) + ' ' + iso.substring(11, 19) + '.' + micros;
  }

  /** {@code 20260929T080000.123Z}: sortable and safe in a file name. */
  public static String compact(Instant instant) {
    return format(instant).replace("-", "").replace(":", "");
  }
}
