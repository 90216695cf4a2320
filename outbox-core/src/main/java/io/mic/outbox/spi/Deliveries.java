package io.mic.outbox.spi;

import io.mic.outbox.DeliveryHandler;
import io.mic.outbox.DeliveryOutcome;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The part every broker's consumer helper shares: run the consumer's handler, and turn its failure into an
 * outcome instead of an exception that would escape into the broker client's callback. The helper then
 * settles the message by the outcome.
 */
public final class Deliveries {
  private static final Logger LOG = LoggerFactory.getLogger(Deliveries.class);

  private Deliveries() {}

  /**
   * Runs {@code handler} with {@code key}.
   *
   * @param source where the message came from, for the log ({@code "queue billing"}, {@code "order.created"})
   * @return {@link DeliveryOutcome#APPLIED} or {@link DeliveryOutcome#DUPLICATE} as the handler returned; when
   *     it threw, {@link DeliveryOutcome#REDELIVERED}, with the failure logged at WARN (an interrupt is restored)
   */
  public static DeliveryOutcome attempt(DeliveryHandler handler, String key, String source) {
    try {
      return DeliveryOutcome.of(handler.handle(key));
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      LOG.warn("handling event {} from {} failed; nothing was committed and it will be delivered again", key,
          source, e);
      return DeliveryOutcome.REDELIVERED;
    }
  }

  /** Logs, at WARN, a message settled for good because {@code problem} (no event id) no redelivery can fix. */
  public static DeliveryOutcome rejected(String problem) {
    LOG.warn("{}: the message is not delivered again", problem);
    return DeliveryOutcome.REJECTED;
  }
}
