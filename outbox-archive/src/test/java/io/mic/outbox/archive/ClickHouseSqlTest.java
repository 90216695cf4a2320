package io.mic.outbox.archive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Instant;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The SQL text itself, for what the local server cannot run (DateTime64 needs ClickHouse 20.1+). */
class ClickHouseSqlTest {
  private static final Instant FROM = Instant.parse("2026-09-29T08:00:00.5Z");
  private static final Instant TO = Instant.parse("2026-09-29T10:00:00.000123Z");

  @Test
  void dateTime64BoundsKeepTheirFractionAndDateTimeBoundsRoundInwards() {
    assertThat(ClickHouseSql.bound(ClickHouseSql.TimeColumn.DATETIME64, FROM, true))
        .isEqualTo("toDateTime64('2026-09-29 08:00:00.500', 3, 'UTC')");
    assertThat(ClickHouseSql.bound(ClickHouseSql.TimeColumn.DATETIME64, TO, false))
        .isEqualTo("toDateTime64('2026-09-29 10:00:00.000123', 6, 'UTC')");
    assertThat(ClickHouseSql.bound(ClickHouseSql.TimeColumn.DATETIME, FROM, true))
        .isEqualTo("toDateTime(" + (Instant.parse("2026-09-29T08:00:01Z").getEpochSecond()) + ")");
    assertThat(ClickHouseSql.bound(ClickHouseSql.TimeColumn.DATETIME, TO, false))
        .isEqualTo("toDateTime(" + (Instant.parse("2026-09-29T10:00:00Z").getEpochSecond()) + ")");
    assertThat(ClickHouseSql.bound(ClickHouseSql.TimeColumn.DATETIME64, Instant.parse("3000-01-01T00:00:00Z"), false))
        .isEqualTo("toDateTime64('2262-04-11 00:00:00.000', 3, 'UTC')");
  }

  @Test
  void theSelectFiltersAndSortsOnTheServer() {
    assertThat(ClickHouseSql.select("`events`.`outbox_archive`", ClickHouseSql.TimeColumn.DATETIME64, "order.created", FROM, TO,
        Set.of("id", "topic", "created_at", "payload", "headers")))
        .isEqualTo("SELECT toString(id) AS original_id, topic, NULL AS aggregate_type, NULL AS aggregate_id,"
            + " toString(created_at, 'UTC') AS created_at_utc, payload, headers FROM `events`.`outbox_archive`"
            + " WHERE topic = 'order.created' AND created_at >= toDateTime64('2026-09-29 08:00:00.500', 3, 'UTC')"
            + " AND created_at <= toDateTime64('2026-09-29 10:00:00.000123', 6, 'UTC')"
            + " ORDER BY created_at, original_id FORMAT JSONEachRow");
  }

  @Test
  void columnTypesAreRecognised() {
    assertThat(ClickHouseSql.timeColumn("DateTime")).isEqualTo(ClickHouseSql.TimeColumn.DATETIME);
    assertThat(ClickHouseSql.timeColumn("DateTime('UTC')")).isEqualTo(ClickHouseSql.TimeColumn.DATETIME);
    assertThat(ClickHouseSql.timeColumn("Nullable(DateTime('Asia/Tokyo'))")).isEqualTo(ClickHouseSql.TimeColumn.DATETIME);
    assertThat(ClickHouseSql.timeColumn("DateTime64(6, 'UTC')")).isEqualTo(ClickHouseSql.TimeColumn.DATETIME64);
    assertThat(ClickHouseSql.timeColumn("Nullable(DateTime64(3, 'Etc/UTC'))"))
        .isEqualTo(ClickHouseSql.TimeColumn.DATETIME64);
    assertThat(ClickHouseSql.timeColumn("String")).isNull();
    assertThat(ClickHouseSql.timeColumn("Date")).isNull();
  }

  /**
   * One zone rule for the archiver and the replay: a DateTime in any zone (Unix seconds both ways), a
   * DateTime64 only in UTC (its values travel as text, read in the column's zone).
   */
  @Test
  void aDateTime64OutsideUtcIsRefusedWithTheFreeFix() {
    assertThat(ClickHouseSql.timeColumn("DateTime64(3)")).isNull();
    assertThat(ClickHouseSql.timeColumn("DateTime64(6, 'Europe/Paris')")).isNull();
    assertThat(ClickHouseSql.timeColumnProblem("created_at", "db.t", "DateTime64(3, 'Europe/Paris')"))
        .isEqualTo("column created_at of ClickHouse table db.t is DateTime64(3, 'Europe/Paris'); expected DateTime"
            + " (any time zone) or DateTime64(p, 'UTC'): the zone of a DateTime64 is metadata, change it with"
            + " ALTER TABLE db.t MODIFY COLUMN created_at DateTime64(3, 'UTC')");
    assertThat(ClickHouseSql.timeColumnProblem("created_at", "t", "Nullable(DateTime64(3))"))
        .endsWith("MODIFY COLUMN created_at Nullable(DateTime64(3, 'UTC'))");
    assertThat(ClickHouseSql.timeColumnProblem("created_at", "t", "String"))
        .isEqualTo("column created_at of ClickHouse table t is String; expected DateTime (any time zone) or"
            + " DateTime64(p, 'UTC')");
  }

  @Test
  void identifiersAreValidatedAndQuotedAndStringsEscaped() {
    assertThat(ClickHouseSql.quotedTable("outbox_archive")).isEqualTo("`outbox_archive`");
    assertThat(ClickHouseSql.quotedTable("events.outbox_archive")).isEqualTo("`events`.`outbox_archive`");
    for (String bad : new String[] {"x`; DROP TABLE y; --", "a.b.c", "1table", "", "t-1", "a".repeat(65)}) {
      assertThatThrownBy(() -> ClickHouseSql.quotedTable(bad)).isInstanceOf(IllegalArgumentException.class);
    }
    assertThat(ClickHouseSql.literal("it's a \\ test\n")).isEqualTo("'it\\'s a \\\\ test\\n'");
  }
}
