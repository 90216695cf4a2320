package io.mic.outbox.jdbc.archive;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.ArchiveException;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.archive.ArchivedEvent;
import io.mic.outbox.archive.ClickHouseArchive;
import io.mic.outbox.archive.JsonLinesArchive;
import io.mic.outbox.archive.Timestamps;
import io.mic.replay.JsonArchiveSource;
import io.mic.replay.ReplayCursor;
import io.mic.replay.ReplayProgress;
import io.mic.replay.ReplayQuery;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import java.util.zip.GZIPInputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The sinks' files and options, without a database (the record format itself: outbox-archive). */
class ArchiveFormatTest {
  private static final Instant T0 = Instant.parse("2026-09-29T08:00:00.123456Z");

  @TempDir Path tmp;

  private static OutboxEvent event(int i, Instant created) {
    return OutboxEvent.stored().id(UUID.nameUUIDFromBytes(("e" + i).getBytes(StandardCharsets.UTF_8)))
        .aggregate("order", "o-" + i).topic("order.created").payload("{\"n\":" + i + ",\"s\":\"é\\\"\"}")
        .headers(java.util.Map.of("tenant", "acme")).createdAt(created).status(OutboxStatus.DISPATCHED).dispatchedAt(created)
        .build();
  }

  @Test
  void filesRotateAndReadBackThroughTheReplayReader() throws Exception {
    Path dir = tmp.resolve("a/b");
    JsonLinesArchive archive = JsonLinesArchive.builder().directory(dir).maxEventsPerFile(4).build();
    List<OutboxEvent> events = new ArrayList<>(IntStream.range(0, 10)
        .mapToObj(i -> event(i, T0.plusMillis(10 - i))).toList()); // newest first: the file is sorted
    archive.archive(events);
    archive.archive(List.of());

    List<Path> files;
    try (Stream<Path> s = Files.list(dir)) {
      files = s.sorted().toList();
    }
    assertThat(files).hasSize(3);
    int lines = 0;
    for (Path f : files) {
      try (InputStream in = new GZIPInputStream(Files.newInputStream(f))) {
        lines += new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n").length;
      }
      List<ArchivedEvent> read = readAll(f);
      assertThat(read).isSortedAccordingTo((a, b) -> a.createdAt().compareTo(b.createdAt()));
      assertThat(f.getFileName().toString()).startsWith("outbox-" + Timestamps.compact(read.get(0).createdAt())
          + "-" + Timestamps.compact(read.get(read.size() - 1).createdAt()) + "-");
    }
    assertThat(lines).isEqualTo(10);
    ArchivedEvent first = readAll(files.get(0)).get(0);
    OutboxEvent oldest = events.get(9);
    assertThat(first.id()).isEqualTo(oldest.id().toString());
    assertThat(first.createdAt()).isEqualTo(oldest.createdAt());
    assertThat(first.payload()).isEqualTo("{\"n\":9,\"s\":\"é\\\"\"}");
    assertThat(first.headers()).isEqualTo(Map.of("tenant", "acme"));
  }

  private static List<ArchivedEvent> readAll(Path file) {
    List<ArchivedEvent> out = new ArrayList<>();
    ReplayQuery q = new ReplayQuery("order.created", Instant.EPOCH, Instant.parse("2100-01-01T00:00:00Z"));
    try (ReplayCursor c = JsonArchiveSource.of(file).open(q, ReplayProgress.NONE)) {
      for (ArchivedEvent e = c.next(); e != null; e = c.next()) {
        out.add(e);
      }
    }
    return out;
  }

  @Test
  void optionsAreValidated() throws IOException {
    assertThatThrownBy(() -> JsonLinesArchive.builder().build()).isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("directory");
    Path file = Files.writeString(tmp.resolve("file"), "x");
    assertThatThrownBy(() -> JsonLinesArchive.builder().directory(file).build())
        .isInstanceOf(InvalidConfigurationException.class);
    assertThatThrownBy(() -> JsonLinesArchive.builder().directory(tmp).maxEventsPerFile(0).build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("maxEventsPerFile");
    for (String table : new String[] {"bad-name", "1abc", "a.b.c", "x`y", "", "a; DROP TABLE t"}) {
      assertThatThrownBy(() -> ClickHouseArchive.builder().url("http://127.0.0.1:8123").table(table).build())
          .as(table).isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("table");
    }
    ClickHouseArchive.builder().url("http://127.0.0.1:8123").table("db.outbox_archive").build();
    assertThatThrownBy(() -> ClickHouseArchive.builder().url("http://u:secret@h:8123").build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessageNotContaining("secret");
    assertThatThrownBy(() -> ClickHouseArchive.builder().url("ftp://h").build())
        .isInstanceOf(InvalidConfigurationException.class);
    assertThatThrownBy(() -> ClickHouseArchive.builder().build()).isInstanceOf(InvalidConfigurationException.class);
    assertThatThrownBy(() -> OutboxArchiver.builder().build()).isInstanceOf(InvalidConfigurationException.class)
        .hasMessageContaining("store");
  }

  @Test
  void unreachableClickHouseIsAnArchiveException() {
    ClickHouseArchive ch = ClickHouseArchive.builder().url("http://127.0.0.1:1").connectTimeout(java.time.Duration.ofSeconds(2))
        .credentials("archiver", "s3cret").build();
    assertThatThrownBy(() -> ch.archive(List.of(event(1, T0)))).isInstanceOf(ArchiveException.class)
        .hasMessageContaining("not reachable").hasMessageNotContaining("s3cret");
  }

  private static final String SECRET = "s3cret-Xq7";
  private static final String CREDENTIALS = "url must not contain credentials: pass them as"
      + " .credentials(user, password)";

  @org.junit.jupiter.params.ParameterizedTest
  @org.junit.jupiter.params.provider.CsvSource(delimiter = '|', value = {
      "http://reader:s3cret-Xq7@click_house:8123|" + CREDENTIALS,
      "http://reader:s3cret-Xq7@127.0.0.1:80a|" + CREDENTIALS,
      "http://reader:s3/cret-Xq7@127.0.0.1:8123|" + CREDENTIALS,
      "http://127.0.0.1:8123/?password=s3cret-Xq7|url must not have a query string (settings and passwords do not"
          + " belong there): use e.g. http://127.0.0.1:8123, credentials as .credentials(user, password), and the"
          + " database in the table (db.outbox_archive)",
      "http://click_house:8123|url host 'click_house:8123' is not host[:port]: a host name has letters, digits, '-'"
          + " and '.' (no '_'), a port is 1 to 65535; e.g. http://127.0.0.1:8123",
      "http://127.0.0.1:99999|url host '127.0.0.1:99999' is not host[:port]: a host name has letters, digits, '-'"
          + " and '.' (no '_'), a port is 1 to 65535; e.g. http://127.0.0.1:8123"})
  void aClickHouseUrlThatCannotBeUsedIsRefusedWithoutItsSecret(String url, String message) {
    assertThatThrownBy(() -> ClickHouseArchive.builder().url(url).build())
        .isInstanceOf(InvalidConfigurationException.class).hasMessage(message);
  }
}
