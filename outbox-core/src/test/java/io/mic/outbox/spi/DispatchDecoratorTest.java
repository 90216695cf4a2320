package io.mic.outbox.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** A decorated publisher is of the wrapped publisher's kind, and the decorator sees every publication. */
class DispatchDecoratorTest {
  private final List<String> calls = new ArrayList<>();
  private final OutboxEvent event = OutboxEvent.builder().aggregate("order", "1").topic("order.created")
      .payload("{}").build();

  /** Records each batch it sees, then sends it on. */
  private final DispatchDecorator recording = (events, next) -> {
    calls.add("decorated " + events.size());
    return next.send(events);
  };

  private BatchDispatchFn batches() {
    return new BatchDispatchFn() {
      @Override
      public void dispatch(OutboxEvent e) {
        calls.add("dispatch");
      }

      @Override
      public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        calls.add("dispatchBatch " + events.size());
        return Map.of(events.get(0).id(), new IllegalStateException("refused"));
      }
    };
  }

  @Test
  void aPlainPublisherStaysPlainAndIsDecoratedPerEvent() throws Exception {
    DispatchFn wrapped = recording.wrap(e -> calls.add("dispatch"));

    wrapped.dispatch(event);

    assertThat(wrapped).isNotInstanceOf(BatchDispatchFn.class);
    assertThat(calls).containsExactly("decorated 1", "dispatch");
  }

  @Test
  void aBatchPublisherStaysABatchPublisherWithoutAChannel() throws Exception {
    DispatchFn wrapped = recording.wrap(batches());

    assertThat(wrapped).isInstanceOf(BatchDispatchFn.class).isNotInstanceOf(ChannelDispatchFn.class);
    assertThat(((BatchDispatchFn) wrapped).dispatchBatch(List.of(event, event))).containsOnlyKeys(event.id());
    wrapped.dispatch(event);
    assertThat(calls).containsExactly("decorated 2", "dispatchBatch 2", "decorated 1", "dispatch");
  }

  @Test
  void aChannelPublisherKeepsItsChannelOverlappingAndClosesIt() throws Exception {
    ChannelDispatchFn inner = new ChannelDispatchFn() {
      @Override
      public void dispatch(OutboxEvent e) {
        calls.add("dispatch");
      }

      @Override
      public BatchChannel channel() {
        return new BatchChannel() {
          @Override
          public Sent send(List<OutboxEvent> events) {
            calls.add("send " + events.size());
            return Map::of;
          }

          @Override
          public boolean overlapping() {
            return true;
          }

          @Override
          public void close() {
            calls.add("close");
          }
        };
      }
    };
    ChannelDispatchFn wrapped = (ChannelDispatchFn) recording.wrap(inner);

    try (BatchChannel channel = wrapped.channel()) {
      assertThat(channel.overlapping()).isTrue();
      assertThat(channel.send(List.of(event)).outcomes()).isEmpty();
    }
    assertThat(wrapped.dispatchBatch(List.of(event, event))).isEmpty();
    assertThat(calls).containsExactly("decorated 1", "send 1", "close", "decorated 2", "send 2", "close");
  }

  @Test
  void aFailureTheDecoratorReportsForOneEventIsThrownByDispatch() {
    DispatchDecorator refusing = (events, next) -> () -> Map.of(events.get(0).id(), new IllegalStateException(
        "refused by the decorator"));

    assertThatThrownBy(() -> refusing.wrap(e -> calls.add("dispatch")).dispatch(event))
        .isInstanceOf(IllegalStateException.class).hasMessage("refused by the decorator");
    assertThat(calls).isEmpty();
  }
}
