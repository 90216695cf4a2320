package io.mic.outbox.micrometer;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;

/**
 * The gauges over the store: rows per status, the age of the oldest waiting event, the age of the
 * database's oldest open transaction, the table's dead row versions and the aggregates held behind a dead
 * event.
 */
final class StoreGauges {
  private final MeterRegistry registry;
  private final List<Meter> meters = new ArrayList<>();

  StoreGauges(MeterRegistry registry, OutboxStore store, String prefix, Tags tags, Duration refresh) {
    this.registry = registry;
    var clock = registry.config().clock();
    CachedRead<Map<OutboxStatus, Long>> counts =
        new CachedRead<>("countByStatus()", store::countByStatus, refresh, clock::monotonicTime);
    CachedRead<Optional<Duration>> oldest =
        new CachedRead<>("oldestPendingAge()", store::oldestPendingAge, refresh, clock::monotonicTime);
    CachedRead<Optional<Duration>> transaction =
        new CachedRead<>("oldestTransactionAge()", store::oldestTransactionAge, refresh, clock::monotonicTime);
    CachedRead<OptionalLong> dead = new CachedRead<>("deadTuples()", store::deadTuples, refresh, clock::monotonicTime);
    CachedRead<Integer> held =
        new CachedRead<>("heldAggregates()", () -> store.heldAggregates().size(), refresh, clock::monotonicTime);

    // the age gauge first: if it already exists, another binding owns these names and would win every read
    List<Meter> before = List.copyOf(registry.find(prefix + ".oldest.pending.age").meters());
    Meter age = TimeGauge.builder(prefix + ".oldest.pending.age", oldest, TimeUnit.SECONDS,
            o -> seconds(o.get()))
        .description("Age of the oldest PENDING or PROCESSING event (0 when none): the outbox lag")
        .tags(tags)
        .strongReference(true)
        .register(registry);
    if (before.stream().anyMatch(m -> m == age)) {
      throw new InvalidConfigurationException("the registry already has outbox gauges named " + prefix
          + ".* with tags " + tags + ": give each store its own .prefix(...) or .tag(...)");
    }
    meters.add(age);
    meters.add(TimeGauge.builder(prefix + ".oldest.transaction.age", transaction, TimeUnit.SECONDS,
            t -> seconds(t.get()))
        .description("Age of the database's oldest open transaction, which holds back the cleanup of the"
            + " outbox's dead rows (0 when none or when the store cannot tell)")
        .tags(tags)
        .strongReference(true)
        .register(registry));
    meters.add(Gauge.builder(prefix + ".dead.tuples", dead, d -> tuples(d.get()))
        .description("Dead row versions of the outbox table not yet vacuumed (NaN when the store cannot tell)")
        .tags(tags)
        .strongReference(true)
        .register(registry));
    meters.add(Gauge.builder(prefix + ".aggregates.held", held, h -> h.get() == null ? Double.NaN : h.get())
        .description("Aggregates whose later events wait behind a dead event (holdAggregateOnDeadLetter), until"
            + " an operator redrives or purges it")
        .tags(tags)
        .strongReference(true)
        .register(registry));
    for (OutboxStatus status : OutboxStatus.values()) {
      // strong references: the registry must keep reading these even if the caller drops the binding
      meters.add(Gauge.builder(prefix + ".events", counts, c -> count(c.get(), status))
          .description("Outbox rows in this status, read from the store at most once per refresh interval")
          .tags(tags).tag("status", status.name())
          .strongReference(true)
          .register(registry));
    }
  }

  private static double count(Map<OutboxStatus, Long> counts, OutboxStatus status) {
    if (counts == null) {
      return Double.NaN; // the store could not be read: an unknown value, not zero
    }
    Long n = counts.get(status);
    return n == null ? 0 : n;
  }

  private static double tuples(OptionalLong count) {
    return count == null || count.isEmpty() ? Double.NaN : count.getAsLong();
  }

  private static double seconds(Optional<Duration> age) {
    if (age == null) {
      return Double.NaN;
    }
    return age.map(d -> d.getSeconds() + d.getNano() / 1e9).orElse(0.0);
  }

  /** Takes the gauges out of the registry, so nothing reads the store any more. */
  void remove() {
    meters.forEach(registry::remove);
  }
}
