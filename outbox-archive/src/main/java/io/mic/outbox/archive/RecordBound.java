package io.mic.outbox.archive;

import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;

/**
 * Bounds the bytes of one record: the parser reads through this stream, and once the bytes read since the
 * record started exceed the bound (plus the parser's read-ahead) the read fails with {@link TooLong}. A
 * 100 MB line is then refused after about the bound, instead of being copied into memory whole.
 */
final class RecordBound extends FilterInputStream {
  /** More than the parser reads ahead of its position (8000 bytes), so a record at the bound passes. */
  static final int SLACK = 1 << 16;

  private final long maxRecordBytes;
  private long read;
  private long recordStart;

  RecordBound(InputStream in, long maxRecordBytes) {
    super(in);
    this.maxRecordBytes = maxRecordBytes;
  }

  /** The parser's byte offset of the record's first token. */
  void recordStartsAt(long offset) {
    recordStart = offset;
  }

  long maxRecordBytes() {
    return maxRecordBytes;
  }

  @Override
  public int read() throws IOException {
    check(1);
    int b = super.read();
    if (b >= 0) {
      read++;
    }
    return b;
  }

  @Override
  public int read(byte[] b, int off, int len) throws IOException {
    check(len);
    int n = super.read(b, off, len);
    if (n > 0) {
      read += n;
    }
    return n;
  }

  private void check(int more) throws TooLong {
    if (read - recordStart > maxRecordBytes + SLACK) {
      throw new TooLong();
    }
  }

  static final class TooLong extends IOException {
    private static final long serialVersionUID = 1L;

    TooLong() {
      super("record longer than the bound");
    }
  }
}
