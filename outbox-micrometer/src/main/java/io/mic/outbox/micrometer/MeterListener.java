package io.mic.outbox.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.ReleaseReason;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Turns dispatcher callbacks into counters and timers. Tagged by topic (and releases by their reason, a
 * handful of values): aggregate ids are unbounded and would make one time series per order, customer, … in
 * the monitoring system.
 */
final class MeterListener implements OutboxListener {
  private final MeterRegistry registry;
  private final String prefix;
  private final Tags tags;
  private final Map<String, TopicMeters> topics = new ConcurrentHashMap<>();
  private final Timer batch;
  private final Counter pollFailures;

  MeterListener(MeterRegistry registry, String prefix, Tags tags) {
    this.registry = registry;
    this.prefix = prefix;
    this.tags = tags;
    this.batch = Timer.builder(prefix + ".batch")
        .description("Time one dispatcher pass took: read or claim, publish and mark a non-empty batch")
        .tags(tags).register(registry);
    this.pollFailures = Counter.builder(prefix + ".poll.failed")
        .description("Polls that failed, e.g. because the database was unreachable")
        .tags(tags).register(registry);
  }

  /**
   * All meters of a topic, registered together the first time the topic is seen: a counter that exists
   * at zero before its first increment lets rate() and increase() see that first increment.
   */
  private record TopicMeters(Counter dispatched, Counter retried, Counter deadLettered, Counter leaseLost,
      Map<ReleaseReason, Counter> released, Counter stalled, Timer publish) {}

  private TopicMeters topic(String topic) {
    return topics.computeIfAbsent(topic, this::register);
  }

  private TopicMeters register(String topic) {
    Tags t = tags.and("topic", topic);
    return new TopicMeters(
        counter("events.dispatched", "Events published and marked DISPATCHED", t),
        counter("events.retried", "Failed publications scheduled for another attempt", t),
        counter("events.dead.lettered", "Events moved to the DLQ after their last attempt", t),
        counter("events.lease.lost", "Marks that changed nothing because another worker took over the lease;"
            + " the event may be published twice", t),
        released(t),
        counter("publish.stalled", "Publications still running after half the lease", t),
        Timer.builder(prefix + ".publish")
            .description("Time to publish one event that was then marked DISPATCHED")
            .tags(t).register(registry));
  }

  /** One counter per reason, tag {@code reason} = the reason in lower case ({@code broker_unavailable}). */
  private Map<ReleaseReason, Counter> released(Tags t) {
    Map<ReleaseReason, Counter> counters = new EnumMap<>(ReleaseReason.class);
    for (ReleaseReason reason : ReleaseReason.values()) {
      counters.put(reason, counter("events.released", "Events put back untried, by reason (broker unavailable,"
          + " dispatcher stopping or paused, an earlier event of the aggregate blocked)",
          t.and("reason", reason.name().toLowerCase(Locale.ROOT))));
    }
    return counters;
  }

  private Counter counter(String name, String description, Tags t) {
    return Counter.builder(prefix + "." + name).description(description).tags(t).register(registry);
  }

  @Override
  public void onDispatched(OutboxEvent event, Duration publishTime) {
    TopicMeters m = topic(event.topic());
    m.dispatched().increment();
    m.publish().record(publishTime);
  }

  @Override
  public void onRetryScheduled(OutboxEvent event, Duration delay, String error) {
    topic(event.topic()).retried().increment();
  }

  @Override
  public void onDeadLettered(OutboxEvent event, String error) {
    topic(event.topic()).deadLettered().increment();
  }

  @Override
  public void onLeaseLost(OutboxEvent event) {
    topic(event.topic()).leaseLost().increment();
  }

  @Override
  public void onReleased(OutboxEvent event, ReleaseReason reason) {
    topic(event.topic()).released().get(reason).increment();
  }

  @Override
  public void onPublishStalled(OutboxEvent event, String worker, Duration running) {
    topic(event.topic()).stalled().increment();
  }

  @Override
  public void onBatch(DispatchResult result, Duration elapsed) {
    batch.record(elapsed);
  }

  @Override
  public void onPollFailed(Throwable error) {
    pollFailures.increment();
  }
}
