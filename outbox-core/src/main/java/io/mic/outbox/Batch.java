package io.mic.outbox;

import io.mic.outbox.WorkerChannel.Publication;
import io.mic.outbox.spi.BatchChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One batch on its single publish path: {@link #send()}, {@link #settle()}, {@link #finish()} (or
 * {@link #abandon()} when it will not be published). The batch goes out in <i>waves</i>: in ordered mode the
 * first event of every aggregate, then the second ones, so two events of one aggregate are never in flight
 * together; otherwise one wave holds everything. A {@link BatchDispatchFn} gets each wave in one call; a plain
 * {@link DispatchFn} is a batch publisher of one event at a time. What each outcome does is the
 * {@link Settlement}'s business.
 */
final class Batch {
  private static final Logger LOG = LoggerFactory.getLogger(OutboxDispatcher.class);

  private final DispatchSettings s;
  private final WorkerChannel channel;
  private final ClaimedBatch claimed;
  private final List<OutboxEvent> events;
  private final long startNanos;
  /** Whether the batch was read or claimed going on after the last one. */
  private final boolean goingOn;
  /** The batch's leases, renewed in the background; {@code null} without claims. */
  private final LeaseKeeper.Lease lease;
  private final Settlement settlement;
  /** The chunk sent and not yet settled, with its outcomes to come; and its publication, for the watchdog. */
  private InFlight inFlight;
  private Publication publication;

  private record InFlight(List<OutboxEvent> events, BatchChannel.Sent sent) {}

  Batch(DispatchSettings s, WorkerChannel channel, ClaimedBatch claimed, long startNanos, boolean goingOn,
      LeaseKeeper.Lease lease) {
    this.s = s;
    this.channel = channel;
    this.claimed = claimed;
    this.events = claimed.events();
    this.startNanos = startNanos;
    this.goingOn = goingOn;
    this.lease = lease;
    this.settlement = new Settlement(s, claimed, lease);
  }

  List<OutboxEvent> events() {
    return events;
  }

  /**
   * Whether more is probably waiting: the batch is full, or it went on after the last one and came back
   * short (its store may stop at the end of a priority), so the rest is before its place.
   */
  boolean moreWaiting() {
    return events.size() == s.batchSize() || goingOn;
  }

  /** The last event of a full batch, the furthest in dispatch order; {@code null} when the batch is short. */
  OutboxEvent lastIfFull() {
    return events.size() == s.batchSize() ? events.get(events.size() - 1) : null;
  }

  /** Whether outcomes of what the batch sent are still to come: {@link #settle()} waits for them. */
  boolean awaitingOutcomes() {
    return inFlight != null;
  }

  /** Whether every event of the batch was marked dispatched; read once the batch is finished. */
  boolean allDispatched() {
    return settlement.allDispatched(events.size());
  }

  /**
   * Publishes every chunk but the last, then sends the last, and returns before its outcomes are in when the
   * publisher can ({@link BatchChannel}); {@link #settle()} waits for them. A chunk that stops the batch (broker
   * down, dispatcher stopping) puts the chunks after it back untried. A batch whose send throws is finished.
   */
  void send() {
    try {
      List<List<OutboxEvent>> chunks = chunks();
      for (int c = 0; c < chunks.size(); c++) {
        boolean last = c == chunks.size() - 1;
        if (!begin(chunks.get(c)) || !last && !end()) {
          List<OutboxEvent> rest = new ArrayList<>();
          chunks.subList(c + 1, chunks.size()).forEach(rest::addAll);
          settlement.putBack(rest);
          break;
        }
      }
    } catch (RuntimeException | Error e) {
      finish();
      throw e;
    }
  }

  /**
   * Waits for the outcomes of the chunk {@link #send()} left in flight and applies them, then puts back what an
   * earlier failure held. A batch whose settling throws is finished.
   */
  void settle() {
    try {
      end();
      settlement.releaseHeld();
    } catch (RuntimeException | Error e) {
      finish();
      throw e;
    }
    settlement.reportTo(channel.outage());
  }

  /** Marks the successes, stops keeping the leases, ends the claim and reports the batch; once, on any thread. */
  DispatchResult finish() {
    try {
      settlement.flush();
    } finally {
      if (lease != null) {
        lease.close();
      }
      claimed.close();
    }
    DispatchResult result = settlement.result(events.size());
    s.listener().onBatch(result, Duration.ofNanos(System.nanoTime() - startNanos));
    LOG.debug("{}: {}", s.worker(), result);
    return result;
  }

  /** A batch claimed ahead that will not be published (the dispatcher pauses or stops): back untried. */
  DispatchResult abandon(ReleaseReason reason) {
    if (s.useClaim()) { // a batch read without claims took nothing
      settlement.release(events, reason);
    }
    return finish();
  }

  /** The waves, each split into single events for a plain {@link DispatchFn}. */
  private List<List<OutboxEvent>> chunks() {
    List<List<OutboxEvent>> waves = s.ordered() ? DispatchOrder.waves(events) : List.of(events);
    if (channel.takesBatches()) {
      return waves;
    }
    return waves.stream().flatMap(List::stream).map(List::of).toList();
  }

  /**
   * Sends a chunk; its outcomes are settled by {@link #end()}.
   *
   * @return false when the batch must stop here: the broker is down or the dispatcher is stopping
   */
  private boolean begin(List<OutboxEvent> chunk) {
    if (lease != null) {
      lease.confirm(); // after a freeze, find out what was taken over before publishing it again
    }
    List<OutboxEvent> todo = settlement.admit(chunk);
    if (todo.isEmpty()) {
      return true;
    }
    if (Thread.currentThread().isInterrupted()) {
      settlement.release(todo, ReleaseReason.STOPPING);
      return false;
    }
    publication = new Publication(todo.get(0), System.nanoTime());
    channel.watch(publication);
    try {
      inFlight = new InFlight(todo, channel.send(todo));
    } catch (Exception e) {
      return failedAll(todo, e);
    } finally {
      channel.watch(null);
    }
    return true;
  }

  /**
   * Waits for the outcomes of the chunk {@link #begin} sent, if any, and applies them.
   *
   * @return false when the batch must stop here: the broker is down or the dispatcher is stopping
   */
  private boolean end() {
    InFlight chunk = inFlight;
    if (chunk == null) {
      return true;
    }
    inFlight = null;
    channel.watch(publication);
    Map<UUID, Exception> failures;
    try {
      failures = chunk.sent().outcomes();
    } catch (Exception e) {
      return failedAll(chunk.events(), e);
    } finally {
      channel.watch(null);
    }
    apply(chunk.events(), failures);
    return true;
  }

  /**
   * A failure of the whole chunk is each event's failure. The batch stops when the broker is down or the
   * dispatcher stops; after any other failure it goes on with the next chunk.
   */
  private boolean failedAll(List<OutboxEvent> chunk, Exception e) {
    Map<UUID, Exception> failures = new HashMap<>();
    chunk.forEach(event -> failures.put(event.id(), e));
    boolean goOn = Outcome.of(e) == Outcome.FAILED;
    apply(chunk, failures);
    return goOn;
  }

  private void apply(List<OutboxEvent> chunk, Map<UUID, Exception> failures) {
    settlement.apply(chunk, failures, (System.nanoTime() - publication.startNanos()) / chunk.size());
  }
}
