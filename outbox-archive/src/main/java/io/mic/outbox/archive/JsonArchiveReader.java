package io.mic.outbox.archive;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import io.mic.outbox.ArchiveException;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Instant;
import java.util.zip.GZIPInputStream;

/**
 * Reads the records of a JSON archive one by one: JSON Lines (one object per line, blank lines allowed) or
 * one JSON array of objects, optionally gzip-compressed (recognised by its magic bytes, whatever the file
 * name). Errors name the file and the line.
 *
 * <p>One streaming parser reads the bytes in both layouts (JSON Lines is a sequence of root values to
 * it): it decodes and checks UTF-8 itself and knows the line of every token, without a String per line.
 */
public final class JsonArchiveReader implements AutoCloseable {
  private static final int BUFFER = 1 << 16;

  /** Stands for a record of another topic, skipped without being read in full. */
  public static final ArchivedEvent OTHER_TOPIC = new ArchivedEvent("-", "-", null, null, Instant.EPOCH,
      "null", null);

  private final String name;
  private final JsonParser parser;
  private final RecordBound bound;
  private final boolean array;
  private long recordLine;
  private long previousEndLine;
  private boolean finished;

  private JsonArchiveReader(String name, JsonParser parser, RecordBound bound) {
    this.name = name;
    this.parser = parser;
    this.bound = bound;
    this.array = parser.currentToken() == JsonToken.START_ARRAY;
  }

  /**
   * Opens the archive; a record longer than {@code maxRecordBytes} (uncompressed) stops the reading with a
   * message naming its line, after about that many bytes were read.
   */
  public static JsonArchiveReader open(Path path, long maxRecordBytes) {
    String name = path.toString();
    InputStream in = null;
    try {
      in = new BufferedInputStream(Files.newInputStream(path), BUFFER);
      in.mark(2);
      boolean gzip = in.read() == 0x1f && in.read() == 0x8b;
      in.reset();
      if (gzip) {
        in = new BufferedInputStream(new GZIPInputStream(in, BUFFER), BUFFER);
      }
      RecordBound bound = new RecordBound(in, maxRecordBytes);
      in = bound;
      JsonParser parser = JsonText.FACTORY.createParser(in);
      try {
        parser.nextToken();
      } catch (JsonProcessingException e) {
        parser.close();
        throw new ArchiveException(problem(name, 1, e));
      } catch (RecordBound.TooLong e) {
        parser.close();
        throw new ArchiveException(tooLong(name, 1, maxRecordBytes));
      }
      return new JsonArchiveReader(name, parser, bound);
    } catch (NoSuchFileException e) {
      closeQuietly(in);
      throw new ArchiveException(name + ": no such file");
    } catch (AccessDeniedException e) {
      closeQuietly(in);
      throw new ArchiveException(name + ": permission denied");
    } catch (IOException e) {
      closeQuietly(in);
      throw new ArchiveException(name + ": cannot read: " + e.getMessage(), e);
    }
  }

  /**
   * The next record, {@link #OTHER_TOPIC} for a record of another topic than {@code topic} (when not
   * {@code null}), or {@code null} at the end of the archive.
   */
  public ArchivedEvent next(String topic) {
    if (finished) {
      return null;
    }
    try {
      JsonToken token = array || recordLine > 0 ? parser.nextToken() : parser.currentToken();
      if (token == null || (array && token == JsonToken.END_ARRAY)) {
        if (array && parser.nextToken() != null) {
          recordLine = line();
          throw new RecordParser.BadRecordException("unexpected content after the array of records");
        }
        finished = true;
        return null;
      }
      recordLine = line();
      bound.recordStartsAt(parser.currentTokenLocation().getByteOffset());
      if (!array && recordLine == previousEndLine) {
        throw new RecordParser.BadRecordException("a second record starts on this line: put one record per line");
      }
      ArchivedEvent event = RecordParser.ARCHIVE.read(parser, topic);
      previousEndLine = line();
      return event == null ? OTHER_TOPIC : event;
    } catch (JsonProcessingException e) {
      throw new ArchiveException(problem(name, recordLine, e));
    } catch (RecordBound.TooLong e) {
      throw new ArchiveException(tooLong(name, recordLine, bound.maxRecordBytes()));
    } catch (RecordParser.BadRecordException e) {
      throw new ArchiveException(name + " line " + recordLine + ": " + e.getMessage());
    } catch (IOException e) {
      throw new ArchiveException(name + " line " + line() + ": cannot read: " + e.getMessage(), e);
    }
  }

  private long line() {
    return parser.currentTokenLocation().getLineNr();
  }

  public long recordLine() {
    return recordLine;
  }

  private static String problem(String name, long recordLine, JsonProcessingException e) {
    String message = JsonText.withoutInput(e.getOriginalMessage());
    if (e instanceof StreamConstraintsException || e.getLocation() == null) {
      // a limit of the parser (nesting depth, number or string length) has no location: the record's line
      return name + " line " + Math.max(1, recordLine) + ": the record is beyond a limit of the JSON parser: "
          + message;
    }
    String what = message != null && message.startsWith("Invalid UTF-8") ? "not valid UTF-8"
        : "not valid JSON: " + message + " (column " + e.getLocation().getColumnNr() + ")";
    return name + " line " + e.getLocation().getLineNr() + ": " + what;
  }

  private static String tooLong(String name, long recordLine, long maxRecordBytes) {
    return name + " line " + Math.max(1, recordLine) + ": the record is longer than " + maxRecordBytes
        + " bytes, the longest record this replay reads: raise the bound with --max-record-mb (maxRecordBytes)"
        + " if the destination takes messages that big";
  }

  @Override
  public void close() {
    try {
      parser.close();
    } catch (IOException e) {
      // nothing was written: a failed close loses nothing
    }
  }

  private static void closeQuietly(InputStream in) {
    if (in != null) {
      try {
        in.close();
      } catch (IOException e) {
        // the open already failed; that is the error to report
      }
    }
  }
}
