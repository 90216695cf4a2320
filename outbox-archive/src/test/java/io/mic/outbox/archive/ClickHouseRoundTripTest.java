package io.mic.outbox.archive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.core.JsonParser;
import io.mic.outbox.ArchiveException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The writer and the reader of the shared module against the real ClickHouse ({@code MIC_TEST_CLICKHOUSE_URL},
 * else the local server): what {@link ClickHouseWriter} inserts, {@link ClickHouseSql#select} and
 * {@link RecordParser#CLICKHOUSE} read back unchanged, and both keep one rule for the time column's zone.
 */
class ClickHouseRoundTripTest {
  private static final String TOPIC = "order.created";
  private static final Instant T0 = Instant.parse("2026-09-29T08:00:00.250Z");

  private final List<String> tables = new ArrayList<>();
  private ClickHouseHttp http;

  @BeforeEach
  void server() throws InterruptedException {
    String url = System.getenv().getOrDefault("MIC_TEST_CLICKHOUSE_URL", "http://127.0.0.1:8123");
    try {
      HttpResponse<String> ping = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(url + "/ping"))
          .timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
      assertThat(ping.statusCode()).isEqualTo(200);
    } catch (IOException e) {
      String message = "ClickHouse is not reachable at " + url + " (" + e + "): start it as .ci/run does, or set"
          + " MIC_TEST_CLICKHOUSE_URL";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        fail(message);
      }
      Assumptions.abort(message);
    }
    http = new ClickHouseHttp(ClickHouseUrl.parse(url, "credentials"), null, null, Duration.ofSeconds(5),
        Duration.ofSeconds(30), "credentials");
  }

  @AfterEach
  void drop() throws InterruptedException {
    for (String t : tables) {
      http.execute("DROP TABLE IF EXISTS " + t, "the cleanup");
    }
  }

  @Test
  void aDateTimeInAnyZoneCarriesTheSameInstantsBothWays() throws Exception {
    for (String zone : List.of("UTC", "Asia/Tokyo", "America/Sao_Paulo")) {
      String table = table("created_at DateTime('" + zone + "')");
      List<OutboxEvent> events = List.of(event(1, T0), event(2, T0.plusSeconds(3600)), event(3, T0.plusSeconds(7)));
      new ClickHouseWriter(http, table).insert(events);

      List<ArchivedEvent> read = select(table);

      assertThat(read).as(zone).extracting(ArchivedEvent::createdAt).containsExactly(
          T0.truncatedTo(ChronoUnit.SECONDS), T0.plusSeconds(7).truncatedTo(ChronoUnit.SECONDS),
          T0.plusSeconds(3600).truncatedTo(ChronoUnit.SECONDS));
      assertThat(read.get(0).id()).isEqualTo(events.get(0).id().toString());
      assertThat(read.get(0).payload()).isEqualTo("{\"n\":1}");
      assertThat(read.get(0).headers()).isEqualTo(Map.of("tenant", "acme"));
    }
  }

  @Test
  void clickHouseReturnsRowsInTheOneArchiveOrder() throws Exception {
    String table = table("created_at DateTime('UTC')");
    // same second; ids above U+FFFF (surrogates in UTF-16) sort after U+FF21 in UTF-8 bytes, as by code point
    for (String id : List.of("\uD83D\uDE00", "b", "\uFF21", "a")) {
      http.execute("INSERT INTO " + table + " VALUES (" + ClickHouseSql.literal(id) + ", '" + TOPIC + "', 'order',"
          + " '42', toDateTime('2026-09-29 08:00:00', 'UTC'), '{}', '')", "the test row");
    }
    http.execute("INSERT INTO " + table + " VALUES ('0', '" + TOPIC + "', 'order', '42',"
        + " toDateTime('2026-09-29 08:00:01', 'UTC'), '{}', '')", "the test row");

    List<ArchivedEvent> read = select(table);

    assertThat(read).extracting(ArchivedEvent::id).containsExactly("a", "b", "\uFF21", "\uD83D\uDE00", "0");
    assertThat(read).isSortedAccordingTo(ArchiveOrder.EVENTS);
  }

  @Test
  void aTimeTypeOutsideTheRuleIsRefusedByTheWriterAndTheReaderAlike() throws Exception {
    String table = table("created_at Date");
    String rule = "column created_at of ClickHouse table " + table + " is Date; expected DateTime (any time zone)"
        + " or DateTime64(p, 'UTC')";

    assertThatThrownBy(() -> new ClickHouseWriter(http, table).insert(List.of(event(1, T0))))
        .isInstanceOf(ArchiveException.class).hasMessage(rule);
    // the replay's check of the same table: the one rule, the one message
    assertThat(ClickHouseSql.timeColumn(http.columns(ClickHouseSql.quotedTable(table), table).get("created_at")))
        .isNull();
    assertThat(ClickHouseSql.timeColumnProblem("created_at", table, "Date")).isEqualTo(rule);
  }

  @Test
  void aMissingTableIsNamedWithTheServersAnswer() {
    String missing = "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    assertThatThrownBy(() -> http.columns(ClickHouseSql.quotedTable(missing), missing))
        .isInstanceOf(ArchiveException.class)
        .hasMessageStartingWith("ClickHouse at " + http.uri() + " answered HTTP 404 to the description of table "
            + missing + ": Code: 60");
  }

  @Test
  void aRowWhosePayloadOrHeadersAreNotJsonIsRefusedWithoutQuotingThem() throws Exception {
    String badPayload = table("created_at DateTime('UTC')");
    http.execute("INSERT INTO " + badPayload + " VALUES ('e1', '" + TOPIC + "', 'order', '42',"
        + " toDateTime('2026-09-29 08:00:00', 'UTC'), 'sk_live_4f9a1c2b', '')", "the test row");
    String badHeaders = table("created_at DateTime('UTC')");
    http.execute("INSERT INTO " + badHeaders + " VALUES ('e2', '" + TOPIC + "', 'order', '42',"
        + " toDateTime('2026-09-29 08:00:01', 'UTC'), '{}', '{\"authorization\": Bearer_9f8e7d6c}')", "the test row");

    assertThatThrownBy(() -> select(badPayload)).isInstanceOf(RecordParser.BadRecordException.class)
        .hasMessage("column 'payload' is not JSON text: Unrecognized token (16 characters): was expecting (JSON"
            + " String, Number, Array, Object or token 'null', 'true' or 'false')");
    assertThatThrownBy(() -> select(badHeaders)).isInstanceOf(RecordParser.BadRecordException.class)
        .hasMessage("column 'headers' is not a JSON object: Unrecognized token (15 characters): was expecting (JSON"
            + " String, Number, Array, Object or token 'null', 'true' or 'false')");
  }

  private String table(String timeColumn) throws InterruptedException {
    String t = "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 16);
    http.execute("CREATE TABLE " + t + " (id String, topic String, aggregate_type Nullable(String),"
        + " aggregate_id Nullable(String), " + timeColumn + ", payload String, headers String)"
        + " ENGINE = MergeTree ORDER BY (topic, id)", "the test table");
    tables.add(t);
    return t;
  }

  private List<ArchivedEvent> select(String table) throws Exception {
    String quoted = ClickHouseSql.quotedTable(table);
    Map<String, String> columns = http.columns(quoted, table);
    String sql = ClickHouseSql.select(quoted, ClickHouseSql.timeColumn(columns.get("created_at")), TOPIC,
        Instant.EPOCH, Instant.parse("2100-01-01T00:00:00Z"), columns.keySet());
    List<ArchivedEvent> out = new ArrayList<>();
    try (InputStream body = http.query(sql, "the test query");
        BufferedReader lines = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
      for (String line = lines.readLine(); line != null; line = lines.readLine()) {
        try (JsonParser p = JsonText.FACTORY.createParser(line)) {
          p.nextToken();
          out.add(RecordParser.CLICKHOUSE.read(p));
        }
      }
    }
    return out;
  }

  private static OutboxEvent event(int i, Instant created) {
    return OutboxEvent.stored().id(UUID.nameUUIDFromBytes(("e" + i).getBytes(StandardCharsets.UTF_8)))
        .aggregate("order", "o-" + i).topic(TOPIC).payload("{\"n\":" + i + "}").headers(Map.of("tenant", "acme"))
        .createdAt(created).status(OutboxStatus.DISPATCHED).dispatchedAt(created).build();
  }
}
