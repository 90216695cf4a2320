package io.mic.outbox.faults;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.DispatchDecorator;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Wraps a real broker publisher with {@link FaultPoint#AFTER_PUBLISH_BEFORE_ACK} after each acknowledged
 * publication, in each of the publisher's ways, its channel included (for a batch: once its outcomes are in,
 * before the dispatcher has them).
 */
final class ParkingPublisher implements DispatchDecorator {

  @Override
  public BatchChannel.Sent send(List<OutboxEvent> events, BatchChannel next) throws Exception {
    BatchChannel.Sent sent = next.send(events);
    return () -> {
      Map<UUID, Exception> failures = sent.outcomes();
      if (failures.size() < events.size()) {
        FaultPoint.AFTER_PUBLISH_BEFORE_ACK.reach();
      }
      return failures;
    };
  }
}
