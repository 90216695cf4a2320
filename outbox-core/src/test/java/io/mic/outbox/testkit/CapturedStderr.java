package io.mic.outbox.testkit;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * What the library logged while a piece of code ran: the tests log through slf4j-simple, which writes every
 * line to the current {@code System.err}.
 */
public final class CapturedStderr {
  private CapturedStderr() {}

  /** Code that may throw, run while standard error is captured. */
  public interface Body {
    void run() throws Exception;
  }

  public static synchronized String during(Body body) throws Exception {
    PrintStream original = System.err;
    ByteArrayOutputStream captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      body.run();
    } finally {
      System.setErr(original);
    }
    String text = captured.toString(StandardCharsets.UTF_8);
    original.print(text); // still in the test's output
    return text;
  }
}
