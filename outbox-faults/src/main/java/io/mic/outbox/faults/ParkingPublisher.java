package io.mic.outbox.faults;

import io.mic.outbox.BatchChannel;
import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.OutboxEvent;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * A real broker publisher with {@link FaultPoint#AFTER_PUBLISH_BEFORE_ACK} after each acknowledged publication,
 * through its channel too (for a batch: once its outcomes are in, before the dispatcher has them).
 */
final class ParkingPublisher implements BatchDispatchFn {
  private final BatchDispatchFn publisher;

  ParkingPublisher(BatchDispatchFn publisher) {
    this.publisher = publisher;
  }

  @Override
  public void dispatch(OutboxEvent event) throws Exception {
    publisher.dispatch(event);
    FaultPoint.AFTER_PUBLISH_BEFORE_ACK.reach();
  }

  @Override
  public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws Exception {
    Map<UUID, Exception> failures = publisher.dispatchBatch(events);
    if (failures.size() < events.size()) {
      FaultPoint.AFTER_PUBLISH_BEFORE_ACK.reach();
    }
    return failures;
  }

  @Override
  public BatchChannel channel() {
    BatchChannel channel = publisher.channel();
    return BatchChannel.forwarding(channel, events -> {
      BatchChannel.Sent sent = channel.send(events);
      return () -> {
        Map<UUID, Exception> failures = sent.outcomes();
        if (failures.size() < events.size()) {
          FaultPoint.AFTER_PUBLISH_BEFORE_ACK.reach();
        }
        return failures;
      };
    });
  }
}
