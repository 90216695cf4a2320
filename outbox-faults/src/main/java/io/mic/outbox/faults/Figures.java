package io.mic.outbox.faults;

/**
 * What the {@link Checker} found for one run. {@code lost}: committed, neither delivered nor (for poison)
 * dead-lettered. {@code duplicates}: deliveries beyond the first of an event. {@code orderViolations}: in
 * ordered mode, deliveries of a sequence k+2 or later of an aggregate before k+1 was ever delivered (or
 * dead-lettered). {@code stuck}: rows still {@code PENDING} or {@code PROCESSING}. {@code dlq}: rows in
 * the DLQ; {@code dlqNotPoison}: of those, events that were not poison.
 */
public record Figures(int events, int delivered, int lost, int duplicates, int orderViolations, long stuck, long dlq,
    long dlqNotPoison) {

  @Override
  public String toString() {
    return "events " + events + ", delivered " + delivered + ", lost " + lost + ", duplicates " + duplicates
        + ", order violations " + orderViolations + ", stuck " + stuck + ", DLQ " + dlq + " (not poison: "
        + dlqNotPoison + ")";
  }
}
