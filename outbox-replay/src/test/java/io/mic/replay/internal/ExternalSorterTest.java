package io.mic.replay.internal;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.archive.ArchiveOrder;
import io.mic.outbox.archive.ArchivedEvent;
import io.mic.replay.ReplayCursor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExternalSorterTest {
  @TempDir
  Path temp;

  private static ArchivedEvent event(int i, long second) {
    return new ArchivedEvent("id-" + i, "t", "order", String.valueOf(i), Instant.ofEpochSecond(1_790_000_000L + second,
        i % 7 * 1_000_000), "{\"n\":" + i + ",\"text\":\"caf\u00e9 \\\"q\\\"\"}", Map.of("h", "v" + i));
  }

  @Test
  void manyRunsAreMergedInReplayOrderThroughSeveralPassesAndTheFilesAreDeleted() throws Exception {
    List<ArchivedEvent> events = new ArrayList<>();
    Random random = new Random(42);
    for (int i = 0; i < 20_000; i++) {
      events.add(event(i, random.nextInt(500)));
    }
    List<ArchivedEvent> expected = new ArrayList<>(events);
    expected.sort(ArchiveOrder.EVENTS);
    Collections.shuffle(events, random);

    ExternalSorter sorter = new ExternalSorter(temp, 64 * 1024, 4); // ~80 runs, fan-in 4: three merge passes
    for (ArchivedEvent e : events) {
      sorter.add(e);
    }
    List<ArchivedEvent> sorted = new ArrayList<>();
    try (ReplayCursor cursor = sorter.sorted()) {
      for (ArchivedEvent e = cursor.next(); e != null; e = cursor.next()) {
        sorted.add(e);
      }
    }

    assertThat(sorter.spills()).isGreaterThan(16);
    assertThat(sorted).isEqualTo(expected); // records compare every field: the spill format loses nothing
    try (var left = Files.list(temp)) {
      assertThat(left).isEmpty();
    }
  }
}
