package io.mic.outbox;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * What became of one {@link OutgoingMessage} a {@link MessagePublisher} sent.
 *
 * <pre>{@code
 * SendOutcome o = outcomes.get(i);
 * if (o.failure() != null) { throw o.failure(); }   // REJECTED or UNAVAILABLE
 * }</pre>
 *
 * @param failure why the message was not acknowledged: a {@link PublishRejectedException} or a
 *     {@link PublishUnavailableException}; {@code null} when it was
 */
public record SendOutcome(Status status, OutboxException failure) {
  public static final SendOutcome ACKNOWLEDGED = new SendOutcome(Status.ACKNOWLEDGED, null);
  public static final SendOutcome DUPLICATE = new SendOutcome(Status.DUPLICATE, null);

  /** How one message fared. */
  public enum Status {
    /** The broker has the message. */
    ACKNOWLEDGED,
    /** The broker had it already and dropped this copy (JetStream inside its duplicate window). */
    DUPLICATE,
    /** The broker refused this message: retrying it the same way will not help ({@link PublishRejectedException}). */
    REJECTED,
    /** Not acknowledged, the message not at fault: the broker was unreachable or the outcome is unknown. */
    UNAVAILABLE
  }

  /** The outcome of a message that failed with {@code failure}: rejected, unless the broker was unavailable. */
  public static SendOutcome failed(OutboxException failure) {
    return new SendOutcome(failure instanceof PublishUnavailableException ? Status.UNAVAILABLE : Status.REJECTED,
        failure);
  }

  /**
   * What {@link BatchDispatchFn#dispatchBatch} returns for {@code events}, sent as messages in the same order
   * with these {@code outcomes}: the failure of each event not delivered, by id.
   */
  public static Map<UUID, Exception> failuresOf(List<OutboxEvent> events, List<SendOutcome> outcomes) {
    Map<UUID, Exception> failures = new LinkedHashMap<>();
    for (int i = 0; i < events.size(); i++) {
      if (outcomes.get(i).failure() != null) {
        failures.put(events.get(i).id(), outcomes.get(i).failure());
      }
    }
    return failures;
  }

  /** Whether the broker has the message (acknowledged, or dropped as a duplicate of one it has). */
  public boolean delivered() {
    return failure == null;
  }
}
