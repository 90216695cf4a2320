package io.mic.outbox.internal;

/** The error text stored with a failed event: exception types and messages, never a payload. */
public final class ErrorText {
  public static final int MAX_LENGTH = 2000;

  private ErrorText() {}

  public static String of(Throwable error) {
    StringBuilder text = new StringBuilder();
    int depth = 0;
    for (Throwable t = error; t != null && depth < 4; t = t.getCause(), depth++) {
      if (depth > 0) {
        text.append(" <- caused by ");
      }
      text.append(t.getClass().getName());
      if (t.getMessage() != null) {
        text.append(": ").append(t.getMessage());
      }
      if (t.getCause() == t) {
        break;
      }
    }
    return text.length() <= MAX_LENGTH ? text.toString() : text.substring(0, MAX_LENGTH - 1) + "…";
  }
}
