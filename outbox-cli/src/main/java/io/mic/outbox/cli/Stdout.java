package io.mic.outbox.cli;

import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;

/**
 * The command's stdout. A reader that went away ({@code mic-outbox status | head -1}: the pipe is closed once
 * {@code head} has its line) is a normal end, so the rest of the output is dropped in silence; any other write
 * error (a full disk) is remembered, and the command exits 3 since what it shows is incomplete.
 */
final class Stdout extends FilterOutputStream {
  private boolean readerGone;
  private boolean refused;

  Stdout(OutputStream out) {
    super(out);
  }

  @Override
  public void write(int b) throws IOException {
    write(new byte[] {(byte) b}, 0, 1);
  }

  @Override
  public void write(byte[] b, int off, int len) throws IOException {
    if (!readerGone) {
      try {
        out.write(b, off, len);
      } catch (IOException e) {
        failed(e);
      }
    }
  }

  @Override
  public void flush() throws IOException {
    if (!readerGone) {
      try {
        out.flush();
      } catch (IOException e) {
        failed(e);
      }
    }
  }

  /** True when a write failed for another reason than a reader that went away. */
  boolean refused() {
    return refused;
  }

  private void failed(IOException e) throws IOException {
    if ("Broken pipe".equals(e.getMessage())) { // EPIPE as the JDK words it; the JVM ignores SIGPIPE
      readerGone = true;
      return;
    }
    refused = true;
    throw e;
  }
}
