package io.mic.outbox.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.mic.outbox.OutboxStatus;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/** Reads meters the way a scrape would, failing clearly when one is missing. */
final class Meters {
  private final MeterRegistry registry;

  Meters(MeterRegistry registry) {
    this.registry = registry;
  }

  /** The counter of a topic; summed over its other tags (the release counter's {@code reason}). */
  double count(String name, String topic) {
    var counters = registry.find(name).tag("topic", topic).counters();
    assertThat(counters).as("counter %s{topic=%s}", name, topic).isNotEmpty();
    return counters.stream().mapToDouble(Counter::count).sum();
  }

  double count(String name, String topic, String reason) {
    Counter c = registry.find(name).tag("topic", topic).tag("reason", reason).counter();
    assertThat(c).as("counter %s{topic=%s,reason=%s}", name, topic, reason).isNotNull();
    return c.count();
  }

  /** The sum over every topic, for tests that drive several. */
  double total(String name) {
    return registry.find(name).counters().stream().mapToDouble(Counter::count).sum();
  }

  long timerCount(String name, String topic) {
    Timer t = topic == null ? registry.find(name).timer() : registry.find(name).tag("topic", topic).timer();
    assertThat(t).as("timer %s{topic=%s}", name, topic).isNotNull();
    return t.count();
  }

  double status(OutboxStatus status) {
    Gauge g = registry.find("mic.outbox.events").tag("status", status.name()).gauge();
    assertThat(g).as("gauge mic.outbox.events{status=%s}", status).isNotNull();
    return g.value();
  }

  double oldestPendingAgeSeconds() {
    TimeGauge g = registry.find("mic.outbox.oldest.pending.age").timeGauge();
    assertThat(g).as("gauge mic.outbox.oldest.pending.age").isNotNull();
    return g.value(TimeUnit.SECONDS);
  }

  double oldestTransactionAgeSeconds() {
    TimeGauge g = registry.find("mic.outbox.oldest.transaction.age").timeGauge();
    assertThat(g).as("gauge mic.outbox.oldest.transaction.age").isNotNull();
    return g.value(TimeUnit.SECONDS);
  }

  double deadTuples() {
    Gauge g = registry.find("mic.outbox.dead.tuples").gauge();
    assertThat(g).as("gauge mic.outbox.dead.tuples").isNotNull();
    return g.value();
  }

  /** Reads every gauge once, like one scrape. */
  void scrape() {
    for (OutboxStatus s : OutboxStatus.values()) {
      status(s);
    }
    oldestPendingAgeSeconds();
    oldestTransactionAgeSeconds();
  }

  /** Fails if a meter carries a tag other than the binding's own, or any of the given values. */
  void assertNoTagBeyond(Set<String> allowedKeys, Set<String> forbiddenValues) {
    for (Meter m : registry.getMeters()) {
      for (Tag t : m.getId().getTags()) {
        assertThat(allowedKeys).as("tag key of %s", m.getId()).contains(t.getKey());
        assertThat(forbiddenValues).as("tag value of %s", m.getId()).doesNotContain(t.getValue());
      }
    }
  }
}
