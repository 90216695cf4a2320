package io.mic.outbox;

import java.time.Duration;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One worker of an {@link AsyncOutboxDispatcher}: its poll loop. A worker that fetched a full batch polls
 * again at once, otherwise it waits a poll interval or a wake-up; after a batch the broker could not take at
 * all it waits for the broker instead; a failing poll is logged, reported and retried; a paused worker settles
 * what went out, hands back what it claimed ahead and waits. It never dies of an exception.
 */
final class Worker {
  private static final Logger LOG = LoggerFactory.getLogger(AsyncOutboxDispatcher.class);

  private final DispatchSettings s;
  private final BatchReader reader;
  private final WorkerChannel channel;
  private final Duration pollInterval;
  private final boolean pipelined;

  Worker(DispatcherBuilder<?> b, String name, Set<String> pausedTopics, Duration pollInterval,
      boolean pipelined) {
    this.s = DispatchSettings.of(b, name, pipelined);
    this.channel = new WorkerChannel(b, name);
    this.reader = new BatchReader(s, channel, pausedTopics);
    this.pollInterval = pollInterval;
    this.pipelined = pipelined;
  }

  WorkerChannel channel() {
    return channel;
  }

  /** Polls and publishes while start {@code generation} runs. */
  void run(RunState state, int generation, ReadCursor cursor) {
    Pipeline pipeline = new Pipeline(s, reader, channel, cursor, state, pipelined);
    try {
      boolean failing = false;
      while (state.runs(generation)) {
        long seen = state.waiter().generation();
        if (state.paused()) {
          pipeline.pause(ReleaseReason.PAUSED);
          await(state, seen, pollInterval, () -> !state.running() || !state.paused());
          continue;
        }
        Duration pause = pollInterval;
        try {
          boolean more = pipeline.dispatchOnce();
          if (failing) {
            LOG.info("{}: polling works again", s.worker());
            failing = false;
          }
          if (channel.outage().pause() != null) {
            waitForBroker(state); // the broker is down: wake-ups would only spin
            continue;
          }
          if (more) {
            continue;
          }
        } catch (RuntimeException | Error e) {
          if (!state.running()) {
            break;
          }
          pause = max(pollInterval, AsyncOutboxDispatcher.POLL_FAILURE_PAUSE);
          if (!failing) {
            LOG.warn("{}: poll failed; retrying every {} until it works", s.worker(), pause, e);
          } else {
            LOG.debug("{}: poll failed again", s.worker(), e);
          }
          failing = true;
          s.listener().onPollFailed(e);
        }
        if (Thread.interrupted() && state.running()) {
          LOG.error("{}: interrupted while running; interrupts are reserved for stop() and close(), polling"
              + " goes on", s.worker());
        }
        await(state, seen, pause, () -> !state.running());
      }
    } finally {
      pipeline.close();
    }
  }

  private void await(RunState state, long seen, Duration timeout, BooleanSupplier stop) {
    try {
      state.waiter().await(seen, timeout, stop);
    } catch (InterruptedException e) {
      if (state.running()) {
        LOG.error("{}: interrupted while idle; polling goes on", s.worker());
      }
    }
  }

  private void waitForBroker(RunState state) {
    try {
      channel.outage().waitOut(state.waiter(), () -> !state.running());
    } catch (InterruptedException e) {
      if (state.running()) {
        LOG.error("{}: interrupted while waiting for the broker; polling goes on", s.worker());
      }
    }
  }

  private static Duration max(Duration a, Duration b) {
    return a.compareTo(b) >= 0 ? a : b;
  }
}
