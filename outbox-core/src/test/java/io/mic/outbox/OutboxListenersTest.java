package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.testkit.OffsetClock;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

class OutboxListenersTest {

  @Test
  void everyListenerHearsEveryEventEvenWhenOneThrows() {
    InMemoryOutboxStore store = new InMemoryOutboxStore(new OffsetClock());
    store.append(OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build());
    List<String> heard = new CopyOnWriteArrayList<>();
    OutboxListener broken = new OutboxListener() {
      @Override public void onDispatched(OutboxEvent e, Duration t) {
        heard.add("broken");
        throw new IllegalStateException("listener bug");
      }
    };
    OutboxListener recording = new OutboxListener() {
      @Override public void onDispatched(OutboxEvent e, Duration t) {
        heard.add("dispatched " + e.aggregateId());
      }

      @Override public void onBatch(DispatchResult r, Duration elapsed) {
        heard.add("batch " + r.dispatched());
      }
    };
    OutboxHealth health = OutboxHealth.builder().store(store).build();

    DispatchResult r = OutboxDispatcher.builder().store(store).dispatchFn(e -> {})
        .listener(OutboxListeners.of(broken, recording, health)).build().dispatchOnce();

    assertThat(r.dispatched()).isEqualTo(1);
    assertThat(heard).containsExactly("broken", "dispatched 1", "batch 1");
    assertThat(health.snapshot().lastSuccessfulDispatch()).isPresent();
  }

  @Test
  void nullListenersAreRejectedByPosition() {
    assertThatThrownBy(() -> OutboxListeners.of(OutboxListener.NONE, null))
        .isInstanceOf(NullPointerException.class).hasMessage("listeners[1] must not be null");
  }

  /** The composite spells out each callback; a callback added to the interface must be forwarded too. */
  @Test
  void theCompositeForwardsEveryCallback() {
    Class<?> composite = OutboxListeners.of(OutboxListener.NONE).getClass();
    List<String> notForwarded = new ArrayList<>();
    for (Method m : OutboxListener.class.getDeclaredMethods()) {
      if (m.isSynthetic() || Modifier.isStatic(m.getModifiers())) {
        continue;
      }
      try {
        composite.getDeclaredMethod(m.getName(), m.getParameterTypes());
      } catch (NoSuchMethodException e) {
        notForwarded.add(m.toString());
      }
    }
    assertThat(notForwarded).isEmpty();
  }
}
