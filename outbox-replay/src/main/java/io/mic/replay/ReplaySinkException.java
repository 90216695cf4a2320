package io.mic.replay;

/**
 * Thrown by a {@link ReplaySink} when a message of a chunk was not acknowledged: it says which one, so the
 * replay can report exactly how far it got.
 *
 * <pre>{@code
 * throw new ReplaySinkException(3, 0, "JetStream rejected event ...: message size exceeds maximum allowed", cause);
 * }</pre>
 */
public class ReplaySinkException extends ReplayException {
  private static final long serialVersionUID = 1L;

  private final int failedIndex;
  private final int acknowledgedAfter;

  /**
   * @param failedIndex index in the chunk of the first message not acknowledged; every message before it was
   * @param acknowledgedAfter messages after {@code failedIndex} that were acknowledged all the same (they
   *     were in flight when the failure happened)
   */
  public ReplaySinkException(int failedIndex, int acknowledgedAfter, String message, Throwable cause) {
    super(message, cause);
    this.failedIndex = failedIndex;
    this.acknowledgedAfter = acknowledgedAfter;
  }

  public int failedIndex() {
    return failedIndex;
  }

  public int acknowledgedAfter() {
    return acknowledgedAfter;
  }
}
