package io.mic.replay;

/**
 * The archive could not be read: a missing or unreadable file, a malformed record (the message names
 * the file and line), an unreachable ClickHouse server or a missing table. The command exits with 2.
 *
 * <pre>{@code
 * catch (ReplayInputException e) { System.err.println(e.getMessage()); }  // archive.jsonl line 7: ...
 * }</pre>
 */
public class ReplayInputException extends ReplayException {
  private static final long serialVersionUID = 1L;

  public ReplayInputException(String message) {
    super(message);
  }

  public ReplayInputException(String message, Throwable cause) {
    super(message, cause);
  }
}
