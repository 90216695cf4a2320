package io.mic.outbox;

import io.mic.outbox.testkit.OffsetClock;
import io.mic.outbox.testkit.OutboxStoreContractTest;
import java.time.Duration;
import java.util.List;

class InMemoryOutboxStoreContractTest extends OutboxStoreContractTest {
  private OffsetClock clock;
  private InMemoryOutboxStore memory;

  @Override
  protected OutboxStore newStore() {
    clock = new OffsetClock();
    memory = new InMemoryOutboxStore(clock);
    return memory;
  }

  @Override
  protected void append(List<OutboxEvent> events) {
    memory.append(events);
  }

  @Override
  protected void elapse(Duration d) {
    clock.advance(d);
  }
}
