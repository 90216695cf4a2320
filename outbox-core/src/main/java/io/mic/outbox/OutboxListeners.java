package io.mic.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Combines listeners, since a dispatcher takes exactly one.
 *
 * <pre>{@code
 * AsyncOutboxDispatcher.builder()
 *     .store(store).dispatchFn(publish)
 *     .listener(OutboxListeners.of(metrics.listener(), health))
 *     .build();
 * }</pre>
 */
public final class OutboxListeners {
  private OutboxListeners() {}

  /**
   * A listener that passes every callback to each of {@code listeners}, in the order given. One that
   * throws is logged and skipped; the others still hear about the event.
   */
  public static OutboxListener of(OutboxListener... listeners) {
    Objects.requireNonNull(listeners, "listeners");
    for (int i = 0; i < listeners.length; i++) {
      Objects.requireNonNull(listeners[i], "listeners[" + i + "] must not be null");
    }
    return new Composite(List.of(listeners));
  }

  private static final class Composite implements OutboxListener {
    private static final Logger LOG = LoggerFactory.getLogger(OutboxListeners.class);
    private final List<OutboxListener> listeners;

    Composite(List<OutboxListener> listeners) {
      this.listeners = listeners;
    }

    private void each(String what, Consumer<OutboxListener> call) {
      for (OutboxListener l : listeners) {
        try {
          call.accept(l);
        } catch (RuntimeException e) {
          LOG.warn("OutboxListener {}.{} threw; the other listeners and dispatch go on",
              l.getClass().getName(), what, e);
        }
      }
    }

    @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
      each("onDispatched", l -> l.onDispatched(event, publishTime));
    }

    @Override public void onRetryScheduled(OutboxEvent event, Duration delay, String error) {
      each("onRetryScheduled", l -> l.onRetryScheduled(event, delay, error));
    }

    @Override public void onDeadLettered(OutboxEvent event, String error) {
      each("onDeadLettered", l -> l.onDeadLettered(event, error));
    }

    @Override public void onLeaseLost(OutboxEvent event) {
      each("onLeaseLost", l -> l.onLeaseLost(event));
    }

    @Override public void onReleased(OutboxEvent event, ReleaseReason reason) {
      each("onReleased", l -> l.onReleased(event, reason));
    }

    @Override public void onPublishStalled(OutboxEvent event, String worker, Duration running) {
      each("onPublishStalled", l -> l.onPublishStalled(event, worker, running));
    }

    @Override public void onBatch(DispatchResult result, Duration elapsed) {
      each("onBatch", l -> l.onBatch(result, elapsed));
    }

    @Override public void onPollFailed(Throwable error) {
      each("onPollFailed", l -> l.onPollFailed(error));
    }
  }
}
