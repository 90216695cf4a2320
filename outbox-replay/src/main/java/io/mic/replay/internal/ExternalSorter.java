package io.mic.replay.internal;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import io.mic.outbox.archive.ArchiveOrder;
import io.mic.outbox.archive.ArchiveRecords;
import io.mic.outbox.archive.ArchivedEvent;
import io.mic.outbox.archive.JsonText;
import io.mic.outbox.archive.RecordParser;
import io.mic.replay.ReplayCursor;
import io.mic.replay.ReplayInputException;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

/**
 * Sorts events in replay order within a memory budget: events are buffered until their estimated size
 * reaches the budget, then sorted and written to a temporary file (a run) in the JSON archive format; at the
 * end the runs are merged, at most {@code fanIn} at a time. Memory stays near the budget plus
 * {@code fanIn} read buffers whatever the archive's size; the temporary files take about the size of the
 * selected events. Everything fits in one run: no file is written at all.
 */
public final class ExternalSorter implements AutoCloseable {
  private static final int IO_BUFFER = 1 << 16;

  private final Path tempDir;
  private final long budgetBytes;
  private final int fanIn;
  private final List<ArchivedEvent> buffer = new ArrayList<>();
  private final List<Path> runs = new ArrayList<>();
  private long bufferedBytes;
  private int spills;

  public ExternalSorter(Path tempDir, long budgetBytes, int fanIn) {
    this.tempDir = tempDir;
    this.budgetBytes = budgetBytes;
    this.fanIn = Math.max(2, fanIn);
  }

  public void add(ArchivedEvent event) throws IOException {
    buffer.add(event);
    bufferedBytes += estimate(event);
    if (bufferedBytes >= budgetBytes) {
      spill();
    }
  }

  public int spills() {
    return spills;
  }

  /** The events in replay order; closing the cursor deletes the temporary files. */
  public ReplayCursor sorted() throws IOException {
    if (runs.isEmpty()) {
      buffer.sort(ArchiveOrder.EVENTS);
      Iterator<ArchivedEvent> it = new ArrayList<>(buffer).iterator();
      buffer.clear();
      return new ReplayCursor() {
        @Override
        public ArchivedEvent next() {
          return it.hasNext() ? it.next() : null;
        }

        @Override
        public void close() {}
      };
    }
    if (!buffer.isEmpty()) {
      spill();
    }
    while (runs.size() > fanIn) {
      List<Path> group = new ArrayList<>(runs.subList(0, fanIn));
      runs.subList(0, fanIn).clear();
      Path merged = newRunFile();
      try (Merge merge = new Merge(group); JsonGenerator out = writer(merged)) {
        for (ArchivedEvent e = merge.next(); e != null; e = merge.next()) {
          write(e, out);
        }
      }
      runs.add(merged);
    }
    Merge merge = new Merge(new ArrayList<>(runs));
    runs.clear();
    return merge;
  }

  private void spill() throws IOException {
    buffer.sort(ArchiveOrder.EVENTS);
    Path run = newRunFile();
    try (JsonGenerator out = writer(run)) {
      for (ArchivedEvent e : buffer) {
        write(e, out);
      }
    }
    runs.add(run);
    spills++;
    buffer.clear();
    bufferedBytes = 0;
  }

  private Path newRunFile() throws IOException {
    Path file = Files.createTempFile(tempDir, "mic-replay-run-", ".jsonl");
    file.toFile().deleteOnExit(); // the fallback when a failed replay could not delete its runs
    return file;
  }

  /** A run is a JSON Lines archive, written and read with the archive's own codec. */
  private static JsonGenerator writer(Path file) throws IOException {
    return JsonText.FACTORY.createGenerator(
        new BufferedWriter(Files.newBufferedWriter(file, StandardCharsets.UTF_8), IO_BUFFER));
  }

  private static void write(ArchivedEvent e, JsonGenerator out) throws IOException {
    ArchiveRecords.writeJsonRecord(out, e);
    out.writeRaw('\n');
  }

  /** A deliberately generous estimate of the heap an event takes (headers, strings, object overhead). */
  static long estimate(ArchivedEvent e) {
    long chars = e.id().length() + e.topic().length() + e.payload().length()
        + (e.aggregateType() == null ? 0 : e.aggregateType().length())
        + (e.aggregateId() == null ? 0 : e.aggregateId().length());
    long bytes = 2 * chars + 7 * 48 + 64;
    for (Map.Entry<String, String> h : e.headers().entrySet()) {
      bytes += 2L * (h.getKey().length() + h.getValue().length()) + 3 * 48;
    }
    return bytes;
  }

  @Override
  public void close() {
    buffer.clear();
    runs.forEach(ExternalSorter::delete);
    runs.clear();
  }

  private static void delete(Path file) {
    try {
      Files.deleteIfExists(file);
    } catch (IOException e) {
      // deleteOnExit is the fallback
    }
  }

  /** A k-way merge of sorted runs; owns the run files and deletes them on close. */
  private static final class Merge implements ReplayCursor {
    private final List<Path> files;
    private final List<BufferedReader> readers = new ArrayList<>();
    private final PriorityQueue<Head> heads = new PriorityQueue<>(
        (a, b) -> ArchiveOrder.EVENTS.compare(a.event, b.event));

    Merge(List<Path> files) throws IOException {
      this.files = files;
      try {
        for (Path file : files) {
          readers.add(new BufferedReader(new InputStreamReader(Files.newInputStream(file), StandardCharsets.UTF_8),
              IO_BUFFER));
          advance(readers.get(readers.size() - 1));
        }
      } catch (IOException | RuntimeException e) {
        close();
        throw e;
      }
    }

    private void advance(BufferedReader reader) throws IOException {
      String line = reader.readLine();
      if (line != null) {
        heads.add(new Head(read(line), reader));
      }
    }

    @Override
    public ArchivedEvent next() {
      Head head = heads.poll();
      if (head == null) {
        return null;
      }
      try {
        advance(head.reader);
      } catch (IOException e) {
        throw new ReplayInputException("cannot read a temporary sort file: " + e.getMessage(), e);
      }
      return head.event;
    }

    @Override
    public void close() {
      for (BufferedReader r : readers) {
        try {
          r.close();
        } catch (IOException e) {
          // only reading: nothing is lost
        }
      }
      files.forEach(ExternalSorter::delete);
    }

    private static ArchivedEvent read(String line) throws IOException {
      try (JsonParser p = JsonText.FACTORY.createParser(line)) {
        p.nextToken();
        return RecordParser.ARCHIVE.read(p);
      } catch (RecordParser.BadRecordException e) {
        throw new IOException("a line of a sorted run is not an archive record: " + e.getMessage(), e);
      }
    }

    private record Head(ArchivedEvent event, BufferedReader reader) {}
  }
}
