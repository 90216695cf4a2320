package io.mic.outbox.archive;

import io.mic.outbox.ArchiveSink;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A directory of gzip-compressed JSON Lines archive files, in the format {@code mic-events-replay
 * --from-json} reads: one record a line, {@code {"id", "topic", "aggregate_type", "aggregate_id",
 * "created_at" (UTC ISO-8601, milliseconds or microseconds), "payload" (the JSON value), "headers" (an
 * object)}}.
 *
 * <p>Files are immutable: each {@link #archive} call writes new files of at most {@code maxEventsPerFile}
 * events ({@code JsonLinesWriter}) and returns once they are durable. A crash leaves at worst a hidden
 * {@code .tmp} file, never a truncated archive. Records in a file are in replay order ({@code created_at}, then id).
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

  @Override
  public void archive(List<OutboxEvent> events) {
    if (events.isEmpty()) {
      return;
    }
    List<Path> written = JsonLinesWriter.write(directory, events, maxEventsPerFile);
    LOG.debug("archived {} event(s) to {}", events.size(), written);
  }

  @Override
  public String toString() {
    return "JSON Lines archive " + directory;
  }

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
