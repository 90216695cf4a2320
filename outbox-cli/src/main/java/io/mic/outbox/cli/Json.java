package io.mic.outbox.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.time.Instant;

/** One JSON document on stdout, written with the streaming generator: {@code --json} output. */
final class Json implements AutoCloseable {
  private static final JsonFactory FACTORY = new JsonFactory();
  private final JsonGenerator g;
  private final PrintWriter out;

  Json(PrintWriter out) {
    this.out = out;
    try {
      this.g = FACTORY.createGenerator(new NonClosing(out));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  Json begin() { return run(g::writeStartObject); }

  Json end() { return run(g::writeEndObject); }

  Json beginArray(String name) { return run(() -> g.writeArrayFieldStart(name)); }

  Json endArray() { return run(g::writeEndArray); }

  Json field(String name, String value) { return run(() -> g.writeStringField(name, value)); }

  Json field(String name, long value) { return run(() -> g.writeNumberField(name, value)); }

  Json field(String name, boolean value) { return run(() -> g.writeBooleanField(name, value)); }

  Json field(String name, Instant value) { return field(name, value == null ? null : value.toString()); }

  /** Seconds with microseconds. */
  Json seconds(String name, Duration value) {
    return run(() -> {
      if (value == null) {
        g.writeNullField(name);
      } else {
        g.writeNumberField(name, new java.math.BigDecimal(value.toNanos() / 1_000).movePointLeft(6));
      }
    });
  }

  Json nullField(String name) { return run(() -> g.writeNullField(name)); }

  Json beginObject(String name) { return run(() -> g.writeObjectFieldStart(name)); }

  Json value(String value) { return run(() -> g.writeString(value)); }

  @Override
  public void close() {
    run(g::close);
    out.println();
    out.flush();
  }

  private interface IoStep {
    void run() throws IOException;
  }

  private Json run(IoStep step) {
    try {
      step.run();
      return this;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Lets the generator close without closing stdout. */
  private static final class NonClosing extends java.io.FilterWriter {
    NonClosing(PrintWriter out) {
      super(out);
    }

    @Override
    public void close() throws IOException {
      flush();
    }
  }
}
