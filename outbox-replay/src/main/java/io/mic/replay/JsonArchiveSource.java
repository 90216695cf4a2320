package io.mic.replay;

import io.mic.outbox.ArchiveException;
import io.mic.outbox.archive.ArchivedEvent;
import io.mic.outbox.archive.JsonArchiveReader;
import io.mic.replay.internal.ExternalSorter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * A JSON archive file: JSON Lines (one record per line; {@code .gz} accepted) or one JSON array of records.
 * Each record: {@code {"id": "…", "topic": "…", "aggregate_type": "…", "aggregate_id": "…",
 * "created_at": "2026-09-29T08:00:00.123Z", "payload": {…}, "headers": {…}}}; {@code created_at} may use
 * any ISO-8601 offset and is normalised to UTC, other fields are ignored.
 *
 * <pre>{@code
 * ReplaySource source = JsonArchiveSource.builder().path(Path.of("archive.jsonl.gz")).build();
 * }</pre>
 *
 * <p>The archive may be in any order and bigger than memory: the selected events are sorted in replay
 * order by an external merge sort. At most {@link Builder#sortMemoryBytes} of events are held at once
 * (default: a sixth of the maximum heap, between 4 MiB and 256 MiB); the rest goes to temporary files in
 * {@link Builder#tempDir}, which need about the size of the selected events and are deleted when the
 * cursor is closed. The whole archive is read and sorted before the first event is published, and every
 * selected event passes the sink's check in that pass, so bad input never leaves a half-published batch.
 *
 * <p>A record longer than {@link Builder#maxRecordBytes} (default 16 MiB, uncompressed) stops the reading
 * with its line, after about that many bytes: a 100 MB line is not copied into memory.
 */
public final class JsonArchiveSource implements ReplaySource {
  public static final int MERGE_FAN_IN = 64;
  public static final long DEFAULT_MAX_RECORD_BYTES = 16L << 20;

  private final Path path;
  private final Path tempDir;
  private final long sortMemoryBytes;
  private final long maxRecordBytes;

  private JsonArchiveSource(Builder b) {
    this.maxRecordBytes = b.maxRecordBytes;
    this.path = b.path;
    this.tempDir = b.tempDir != null ? b.tempDir : Path.of(System.getProperty("java.io.tmpdir"));
    this.sortMemoryBytes = b.sortMemoryBytes > 0 ? b.sortMemoryBytes : defaultSortMemory();
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The archive at {@code path} with the default sort settings. */
  public static JsonArchiveSource of(Path path) {
    return builder().path(path).build();
  }

  static long defaultSortMemory() {
    long sixth = Runtime.getRuntime().maxMemory() / 6;
    return Math.max(4L << 20, Math.min(256L << 20, sixth));
  }

  /**
   * The file, or every archive file of the directory ({@code *.jsonl}, {@code *.jsonl.gz}, {@code *.json},
   * {@code *.json.gz}; hidden files, such as the archiver's temporary ones, skipped), by name.
   */
  private List<Path> files() {
    if (!Files.isDirectory(path)) {
      return List.of(path);
    }
    try (Stream<Path> listed = Files.list(path)) {
      List<Path> files = listed.filter(Files::isRegularFile).filter(f -> {
        String name = f.getFileName().toString();
        return !name.startsWith(".") && (name.endsWith(".jsonl") || name.endsWith(".jsonl.gz")
            || name.endsWith(".json") || name.endsWith(".json.gz"));
      }).sorted().toList();
      if (files.isEmpty()) {
        throw new ReplayInputException("the archive directory " + path + " holds no *.jsonl, *.jsonl.gz, *.json"
            + " or *.json.gz file", null);
      }
      return files;
    } catch (IOException e) {
      throw new ReplayInputException("cannot list the archive directory " + path + ": " + e.getMessage(), e);
    }
  }

  @Override
  public ReplayCursor open(ReplayQuery query, ReplayProgress progress, EventCheck check) {
    Objects.requireNonNull(query, "query");
    Objects.requireNonNull(check, "check");
    ExternalSorter sorter = new ExternalSorter(tempDir, sortMemoryBytes, MERGE_FAN_IN);
    try {
      long read = 0;
      long selected = 0;
      for (Path file : files()) { // the sort merges the files into replay order
        try (JsonArchiveReader reader = JsonArchiveReader.open(file, maxRecordBytes)) {
          for (ArchivedEvent e = reader.next(query.topic()); e != null; e = reader.next(query.topic())) {
            read++;
            if (e != JsonArchiveReader.OTHER_TOPIC && query.matches(e)) {
              selected++;
              try {
                check.check(e);
              } catch (UnpublishableEventException bad) {
                throw bad.at(file + " line " + reader.recordLine());
              }
              sorter.add(e);
            }
            if ((read & 0xFFF) == 0) {
              progress.read(read, selected);
            }
          }
        }
      }
      progress.read(read, selected);
      return sorter.sorted();
    } catch (IOException e) {
      sorter.close();
      throw new ReplayInputException("cannot sort the archive in " + tempDir + ": " + e.getMessage()
          + " (is there room for the selected events? set another directory with --temp-dir)", e);
    } catch (ArchiveException e) {
      sorter.close();
      throw new ReplayInputException(e.getMessage(), e);
    } catch (RuntimeException e) {
      sorter.close();
      throw e;
    }
  }

  @Override
  public String toString() {
    return "JSON archive " + path;
  }

  public static final class Builder {
    private Path path;
    private Path tempDir;
    private long sortMemoryBytes;
    private long maxRecordBytes = DEFAULT_MAX_RECORD_BYTES;

    private Builder() {}

    /** Required: the archive file, or a directory of them. */
    public Builder path(Path path) {
      this.path = path;
      return this;
    }

    /** Where sorted runs go when the selection does not fit in the sort memory (default: java.io.tmpdir). */
    public Builder tempDir(Path tempDir) {
      this.tempDir = tempDir;
      return this;
    }

    /** Bytes of events held in memory before a sorted run is written to disk (default: heap / 6, 4 to 256 MiB). */
    public Builder sortMemoryBytes(long sortMemoryBytes) {
      this.sortMemoryBytes = sortMemoryBytes;
      return this;
    }

    /**
     * The longest record read, in bytes of uncompressed JSON (default 16 MiB); a longer one stops the replay
     * with its line before it is held in memory. Raise it only for a destination that takes such messages.
     */
    public Builder maxRecordBytes(long maxRecordBytes) {
      this.maxRecordBytes = maxRecordBytes;
      return this;
    }

    public JsonArchiveSource build() {
      if (maxRecordBytes < 1024) {
        throw new ReplayConfigurationException("maxRecordBytes", "maxRecordBytes must be at least 1024, was "
            + maxRecordBytes);
      }
      if (path == null) {
        throw new ReplayConfigurationException("path", "path is required: the JSON archive to replay from");
      }
      if (tempDir != null && !Files.isDirectory(tempDir)) {
        throw new ReplayConfigurationException("tempDir", "tempDir '" + tempDir + "' is not a directory");
      }
      if (sortMemoryBytes < 0 || (sortMemoryBytes > 0 && sortMemoryBytes < (1 << 20))) {
        throw new ReplayConfigurationException("sortMemoryBytes", "sortMemoryBytes must be at least 1048576"
            + " (1 MiB), was " + sortMemoryBytes);
      }
      return new JsonArchiveSource(this);
    }
  }
}
