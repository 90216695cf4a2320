package io.mic.replay;

/**
 * An archived event the destination can never take (a character its headers cannot carry, a message over its
 * size limit). A sink throws it from {@link ReplaySink#validate}; the source adds where the event is (file and
 * line, table and row). It is found before the first publication, so nothing was published. The command exits
 * with 2. The message names the event and the fix, never the payload.
 *
 * <pre>{@code
 * throw new UnpublishableEventException("event 42 cannot go to NATS: the message would be 2000000 bytes ...");
 * }</pre>
 */
public class UnpublishableEventException extends ReplayInputException {
  private static final long serialVersionUID = 1L;

  public UnpublishableEventException(String message) {
    super(message);
  }

  /** The same problem, with where the event is in the archive in front: {@code archive.jsonl line 7: …}. */
  public UnpublishableEventException at(String where) {
    return new UnpublishableEventException(where + ": " + getMessage());
  }
}
