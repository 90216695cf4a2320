package io.mic.replay;

/**
 * A publication failed and the replay stopped there. The events before {@link #firstUnpublishedId()} were
 * all acknowledged; running the replay again with the same batch id republishes them with the same
 * {@code Nats-Msg-Id}, which JetStream drops inside its duplicate window. The command exits with 1.
 *
 * <pre>{@code
 * catch (ReplayPublishException e) {
 *   System.err.println(e.published() + " published; first unpublished: " + e.firstUnpublishedId());
 * }
 * }</pre>
 */
public class ReplayPublishException extends ReplayException {
  private static final long serialVersionUID = 1L;

  private final long published;
  private final String firstUnpublishedId;
  private final String batchId;

  public ReplayPublishException(String message, long published, String firstUnpublishedId, String batchId,
      Throwable cause) {
    super(message, cause);
    this.published = published;
    this.firstUnpublishedId = firstUnpublishedId;
    this.batchId = batchId;
  }

  public long published() {
    return published;
  }

  /** The id of the first event not published, or {@code null} when the sink failed before the first one. */
  public String firstUnpublishedId() {
    return firstUnpublishedId;
  }

  public String batchId() {
    return batchId;
  }
}
