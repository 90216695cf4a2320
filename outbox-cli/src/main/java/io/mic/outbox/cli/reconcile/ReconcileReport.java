package io.mic.outbox.cli.reconcile;

import java.time.Instant;
import java.util.List;

/**
 * What {@link Reconciliation#run()} found for one topic and range. Each {@link Difference} has a count and up
 * to {@link Reconciliation#SAMPLE_SIZE} sample ids; a difference whose source was not given is absent.
 *
 * @param dispatched events {@code DISPATCHED} in the range
 * @param live events still {@code PENDING} or {@code PROCESSING} in the range
 * @param deadLetters events in the {@code DLQ} in the range
 * @param onBroker messages of the topic on the broker since the start, or -1 when the broker was not scanned
 * @param notes what could not be compared, and why
 * @param comparable false when the table no longer holds events the broker or inbox has from the range: the
 *     comparisons with them were not made, and the notes say why
 */
public record ReconcileReport(String topic, Instant from, Instant to, long dispatched, long live, long deadLetters,
    long onBroker, List<Difference> differences, List<String> notes, boolean comparable) {

  /** Names of the differences, as in the JSON report. */
  public static final String STILL_LIVE = "stillLiveAfterThreshold";
  public static final String DEAD_LETTERS = "deadLetters";
  public static final String DISPATCHED_NOT_ON_BROKER = "dispatchedNotOnBroker";
  public static final String ON_BROKER_NOT_MARKED = "onBrokerNotMarked";
  public static final String NOT_PROCESSED_BY_CONSUMER = "notProcessedByConsumer";
  public static final String DOMAIN_WITHOUT_EVENT = "domainRowsWithoutEvent";

  public record Difference(String name, String description, long count, List<String> sample) {}

  public List<Difference> over(long tolerance) {
    return differences.stream().filter(d -> d.count() > tolerance).toList();
  }
}
