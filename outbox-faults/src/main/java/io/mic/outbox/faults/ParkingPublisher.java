package io.mic.outbox.faults;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.OutboxEvent;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** A real broker publisher with {@link FaultPoint#AFTER_PUBLISH_BEFORE_ACK} after each acknowledged publication. */
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
}
