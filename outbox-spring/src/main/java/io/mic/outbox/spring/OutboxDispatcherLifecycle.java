package io.mic.outbox.spring;

import io.mic.outbox.AsyncOutboxDispatcher;
import java.util.Objects;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the dispatcher once the application context is refreshed and closes it gracefully (stop polling,
 * finish the publications in flight, release the rest) when the context stops, in the last start phase
 * and so the first stop phase: before any bean is destroyed, the DataSource included.
 *
 * <p>A closed dispatcher cannot start again, so a context that is stopped and started again needs a new
 * one; an application context is normally closed after its stop.
 */
public final class OutboxDispatcherLifecycle implements SmartLifecycle {
  private final AsyncOutboxDispatcher dispatcher;
  private volatile boolean running;

  public OutboxDispatcherLifecycle(AsyncOutboxDispatcher dispatcher) {
    this.dispatcher = Objects.requireNonNull(dispatcher, "dispatcher");
  }

  @Override
  public void start() {
    dispatcher.start();
    running = true;
  }

  @Override
  public void stop() {
    try {
      dispatcher.close();
    } finally {
      running = false;
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  /** The last phase to start and the first to stop. */
  @Override
  public int getPhase() {
    return SmartLifecycle.DEFAULT_PHASE;
  }

  public AsyncOutboxDispatcher dispatcher() {
    return dispatcher;
  }
}
