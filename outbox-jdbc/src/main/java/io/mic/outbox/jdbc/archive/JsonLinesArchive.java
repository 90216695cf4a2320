package io.mic.outbox.jdbc.archive;

import com.fasterxml.jackson.core.JsonGenerator;
import io.mic.outbox.InvalidConfigurationException;
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
 * A directory of gzip-compressed JSON Lines archive files, in the format {@code mic-events-replay
 * --from-json} reads: one record a line, {@code {"id", "topic", "aggregate_type", "aggregate_id",
 * "created_at" (UTC ISO-8601, milliseconds or microseconds), "payload" (the JSON value), "headers" (an
 * object)}}.
 *
 * <p>Files are immutable: each {@link #archive} call writes new files of at most
 * {@code maxEventsPerFile} events (rotation), each first to a hidden temporary file, then fsynced, renamed
 * atomically to {@code outbox-<first created_at>-<last created_at>-<uuid>.jsonl.gz} and the directory
 * fsynced; only then does {@code archive} return. A crash leaves at worst a hidden {@code .tmp} file, never
 * a truncated archive. Records in a file are in replay order ({@code created_at}, then id).
 *
 * <p>Replay reads the whole directory ({@code mic-events-replay --from-json /var/lib/outbox-archive …}),
 * merging its files in replay order; gzip members concatenate, so a part of it can also be replayed with
 * {@code cat outbox-2026*.jsonl.gz > part.jsonl.gz}.
 */
public final class JsonLinesArchive implements ArchiveSink {
  public static final int DEFAULT_MAX_EVENTS_PER_FILE = 100_000;

  private static final Logger LOG = LoggerFactory.getLogger(JsonLinesArchive.class);

  private final Path directory;
  private final int maxEventsPerFile;

  private JsonLinesArchive(Path directory, int maxEventsPerFile) {
    this.directory = directory;
    this.maxEventsPerFile = maxEventsPerFile;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Path directory() {
    return directory;
  }

  @Override
  public void archive(List<OutboxEvent> events) {
    if (events.isEmpty()) {
      return;
    }
    List<OutboxEvent> sorted = new ArrayList<>(events);
    sorted.sort(ArchiveRecords.REPLAY_ORDER);
    List<Path> written = new ArrayList<>();
    for (int from = 0; from < sorted.size(); from += maxEventsPerFile) {
      written.add(writeFile(sorted.subList(from, Math.min(sorted.size(), from + maxEventsPerFile))));
    }
    syncDirectory();
    LOG.debug("archived {} event(s) to {}", sorted.size(), written);
  }

  private Path writeFile(List<OutboxEvent> events) {
    String id = UUID.randomUUID().toString();
    Path target = directory.resolve("outbox-" + ArchiveRecords.compact(events.get(0).createdAt()) + "-"
        + ArchiveRecords.compact(events.get(events.size() - 1).createdAt()) + "-" + id + ".jsonl.gz");
    Path temp = directory.resolve(".outbox-" + id + ".jsonl.gz.tmp");
    try {
      try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
        OutputStream file = Channels.newOutputStream(channel);
        GZIPOutputStream gzip = new GZIPOutputStream(file, 1 << 16);
        try (JsonGenerator g = ArchiveRecords.FACTORY.createGenerator(new BufferedOutputStream(gzip, 1 << 16))) {
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
  private void syncDirectory() {
    try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
      dir.force(true);
    } catch (IOException e) {
      if (Files.isDirectory(directory)) {
        LOG.debug("cannot fsync directory {} ({}); file contents are synced", directory, e.toString());
      } else {
        throw new ArchiveException("archive directory " + directory + " vanished: " + e, e);
      }
    }
  }

  @Override
  public String toString() {
    return "JSON Lines archive " + directory;
  }

  /** Options of a {@link JsonLinesArchive}. */
  public static final class Builder {
    private Path directory;
    private int maxEventsPerFile = DEFAULT_MAX_EVENTS_PER_FILE;

    private Builder() {}

    /** Required: the directory the files go to; created if missing. */
    public Builder directory(Path directory) {
      this.directory = directory;
      return this;
    }

    /** Events per file at most (default 100000): a bigger page is split into several files. */
    public Builder maxEventsPerFile(int maxEventsPerFile) {
      this.maxEventsPerFile = maxEventsPerFile;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public JsonLinesArchive build() {
      if (directory == null) {
        throw new InvalidConfigurationException("directory is required: the archive directory");
      }
      if (maxEventsPerFile < 1) {
        throw new InvalidConfigurationException("maxEventsPerFile must be >= 1, was " + maxEventsPerFile);
      }
      try {
        Files.createDirectories(directory);
      } catch (IOException e) {
        throw new InvalidConfigurationException("directory " + directory + " cannot be created: " + e);
      }
      if (!Files.isWritable(directory)) {
        throw new InvalidConfigurationException("directory " + directory + " is not writable");
      }
      return new JsonLinesArchive(directory, maxEventsPerFile);
    }
  }
}
