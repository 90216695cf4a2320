package io.mic.outbox.internal;

import io.mic.outbox.DispatchResult;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import java.time.Duration;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Shields dispatch from a listener that throws: the failure is logged and dispatch goes on. */
public final class SafeListener implements OutboxListener {
  private static final Logger LOG = LoggerFactory.getLogger(SafeListener.class);
  private final OutboxListener delegate;

  public SafeListener(OutboxListener delegate) {
    this.delegate = delegate;
  }

  private void call(String what, Consumer<OutboxListener> call) {
    try {
      call.accept(delegate);
    } catch (RuntimeException e) {
      LOG.warn("OutboxListener.{} threw; dispatch goes on", what, e);
    }
  }

  @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
    call("onDispatched", l -> l.onDispatched(event, publishTime));
  }

  @Override public void onRetryScheduled(OutboxEvent event, Duration delay, String error) {
    call("onRetryScheduled", l -> l.onRetryScheduled(event, delay, error));
  }

  @Override public void onDeadLettered(OutboxEvent event, String error) {
    call("onDeadLettered", l -> l.onDeadLettered(event, error));
  }

  @Override public void onLeaseLost(OutboxEvent event) {
    call("onLeaseLost", l -> l.onLeaseLost(event));
  }

  @Override public void onReleased(OutboxEvent event, String reason) {
    call("onReleased", l -> l.onReleased(event, reason));
  }

  @Override public void onPublishStalled(OutboxEvent event, String worker, Duration running) {
    call("onPublishStalled", l -> l.onPublishStalled(event, worker, running));
  }

  @Override public void onBatch(DispatchResult result, Duration elapsed) {
    call("onBatch", l -> l.onBatch(result, elapsed));
  }

  @Override public void onPollFailed(Throwable error) {
    call("onPollFailed", l -> l.onPollFailed(error));
  }
}
