package io.mic.outbox.archive;

import com.fasterxml.jackson.core.JsonGenerator;
import io.mic.outbox.ArchiveException;
import io.mic.outbox.OutboxEvent;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.zip.GZIPOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes immutable gzip-compressed JSON Lines archive files, in the format {@link JsonArchiveReader} reads:
 * each file first to a hidden temporary file, then fsynced, renamed atomically to
 * {@code outbox-<first created_at>-<last created_at>-<uuid>.jsonl.gz}, and the directory fsynced.
 */
final class JsonLinesWriter {
  private static final Logger LOG = LoggerFactory.getLogger(JsonLinesWriter.class);

  private JsonLinesWriter() {}

  /**
   * Writes {@code events} in replay order; returns once the files are durable.
   *
   * @throws ArchiveException nothing may be assumed written (no partial file is left under its name)
   */
  public static List<Path> write(Path directory, List<OutboxEvent> events, int maxEventsPerFile) {
    List<OutboxEvent> sorted = new ArrayList<>(events);
    sorted.sort(ArchiveOrder.OUTBOX_EVENTS);
    List<Path> written = new ArrayList<>();
    for (int from = 0; from < sorted.size(); from += maxEventsPerFile) {
      written.add(writeFile(directory, sorted.subList(from, Math.min(sorted.size(), from + maxEventsPerFile))));
    }
    if (!written.isEmpty()) {
      syncDirectory(directory);
    }
    return written;
  }

  private static Path writeFile(Path directory, List<OutboxEvent> events) {
    String id = UUID.randomUUID().toString();
    Path target = directory.resolve("outbox-" + Timestamps.compact(events.get(0).createdAt()) + "-"
        + Timestamps.compact(events.get(events.size() - 1).createdAt()) + "-" + id + ".jsonl.gz");
    Path temp = directory.resolve(".outbox-" + id + ".jsonl.gz.tmp");
    try {
      try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        OutputStream file = Channels.newOutputStream(channel);
        GZIPOutputStream gzip = new GZIPOutputStream(file, 1 << 16);
        try (JsonGenerator g = JsonText.FACTORY.createGenerator(new BufferedOutputStream(gzip, 1 << 16))) {
          g.configure(JsonGenerator.Feature.AUTO_CLOSE_TARGET, false);
          for (OutboxEvent e : events) {
            ArchiveRecords.writeJsonRecord(g, e);
            g.writeRaw('\n');
          }
        }
        gzip.finish();
        gzip.flush();
        channel.force(true);
      }
      Files.move(temp, target, StandardCopyOption.ATOMIC_MOVE);
      return target;
    } catch (IOException | RuntimeException e) {
      try {
        Files.deleteIfExists(temp);
      } catch (IOException ignored) {
        // the write failed already; a leftover hidden .tmp file is harmless
      }
      throw new ArchiveException("cannot write archive file " + target + ": " + e, e);
    }
  }

  /** Makes the renames durable (Linux, macOS); where a directory cannot be opened this is a no-op. */
  private static void syncDirectory(Path directory) {
    try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
      dir.force(true);
    } catch (IOException e) {
      if (!Files.isDirectory(directory)) {
        throw new ArchiveException("archive directory " + directory + " vanished: " + e, e);
      }
      LOG.debug("cannot fsync directory {} ({}); file contents are synced", directory, e.toString());
    }
  }
}
