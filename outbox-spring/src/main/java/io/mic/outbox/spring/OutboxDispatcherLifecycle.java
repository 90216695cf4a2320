package io.mic.outbox.spring;

import io.mic.outbox.AsyncOutboxDispatcher;
import java.util.Objects;
import org.springframework.context.SmartLifecycle;

/**
 * Starts the dispatcher once the application context is refreshed and stops it gracefully (stop polling,
 * finish the publications in flight and their marks, release the rest) when the context stops, in the last
 * start phase and so the first stop phase (SmartLifecycle's default phase): before any bean is destroyed, the
 * DataSource included. A context that is stopped and started again (a checkpoint and restore,
 * {@code context.stop()} then {@code context.start()}) dispatches again; the dispatcher bean is closed for good
 * when the context closes.
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
      dispatcher.stop();
    } finally {
      running = false;
    }
  }

  @Override
  public boolean isRunning() {
    return running;
  }

  public AsyncOutboxDispatcher dispatcher() {
    return dispatcher;
  }
}
