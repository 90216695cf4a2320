package io.mic.outbox.micrometer;

import static io.mic.outbox.OutboxStatus.DISPATCHED;
import static io.mic.outbox.OutboxStatus.DLQ;
import static io.mic.outbox.OutboxStatus.PENDING;
import static io.mic.outbox.OutboxStatus.PROCESSING;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MockClock;
import io.micrometer.core.instrument.simple.SimpleConfig;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The binding driven by real dispatchers over the in-memory store. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class MicrometerOutboxMetricsTest {
  private static final Instant T0 = Instant.parse("2026-09-29T08:00:00Z");
  private static final Duration REFRESH = MicrometerOutboxMetrics.DEFAULT_GAUGE_REFRESH;

  private final MockClock meterClock = new MockClock();
  private final SimpleMeterRegistry registry = new SimpleMeterRegistry(SimpleConfig.DEFAULT, meterClock);
  private final Meters meters = new Meters(registry);
  private final SettableClock storeClock = new SettableClock(T0);
  private final InMemoryOutboxStore store = new InMemoryOutboxStore(storeClock);
  private final CountingStore counting = new CountingStore(store);
  private final MicrometerOutboxMetrics metrics =
      MicrometerOutboxMetrics.builder().registry(registry).store(counting).build();

  private static OutboxEvent event(String topic, String aggregateId, int priority) {
    return OutboxEvent.builder().aggregate("customer", aggregateId).topic(topic).payload("{\"secret\":1}")
        .priority(priority).build();
  }

  @Test
  void countsEveryOutcomePerTopicAndGaugesFollowTheStore() {
    // priorities fix the batch order: the unavailable broker is met last, so it only releases itself
    store.append(List.of(event("order.created", "agg-a1", 3), event("order.created", "agg-a2", 3),
        event("order.created", "agg-a3", 3), event("payment.failed", "agg-b1", 2),
        event("payment.failed", "agg-b2", 2), event("stock.reserved", "agg-c1", 1)));
    AtomicBoolean brokerDown = new AtomicBoolean(true);
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(counting).maxAttempts(2)
        .listener(metrics.listener())
        .dispatchFn(e -> {
          if (e.topic().equals("payment.failed")) {
            throw new IllegalArgumentException("rejected by the broker");
          }
          if (e.topic().equals("stock.reserved") && brokerDown.getAndSet(false)) {
            throw new PublishUnavailableException("broker unreachable");
          }
        })
        .build();

    storeClock.advance(Duration.ofSeconds(42));
    assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(6, 3, 2, 0, 1, 0));

    assertThat(meters.count("mic.outbox.events.dispatched", "order.created")).isEqualTo(3);
    assertThat(meters.count("mic.outbox.events.retried", "payment.failed")).isEqualTo(2);
    assertThat(meters.count("mic.outbox.events.released", "stock.reserved")).isEqualTo(1);
    assertThat(meters.count("mic.outbox.events.released", "stock.reserved", "broker_unavailable")).isEqualTo(1);
    assertThat(meters.count("mic.outbox.events.released", "stock.reserved", "stopping"))
        .as("each reason counted apart, at zero before its first release").isZero();
    assertThat(meters.status(PENDING)).isEqualTo(3);
    assertThat(meters.status(PROCESSING)).isZero();
    assertThat(meters.status(DISPATCHED)).isEqualTo(3);
    assertThat(meters.status(DLQ)).isZero();
    // the oldest pending event is the 4th of the batch, which the store placed 3 µs after the first
    assertThat(meters.oldestPendingAgeSeconds()).isEqualTo(42.0 - 0.000_003);
    assertThat(meters.oldestTransactionAgeSeconds()).as("the in-memory store has no transactions").isZero();

    storeClock.advance(Duration.ofHours(1));
    assertThat(dispatcher.dispatchOnce()).isEqualTo(new DispatchResult(3, 1, 0, 2, 0, 0));

    assertThat(meters.status(DLQ)).as("still the cached value inside the refresh interval").isZero();
    meterClock.add(REFRESH);
    assertThat(meters.status(PENDING)).isZero();
    assertThat(meters.status(PROCESSING)).isZero();
    assertThat(meters.status(DISPATCHED)).isEqualTo(4);
    assertThat(meters.status(DLQ)).isEqualTo(2);
    assertThat(meters.oldestPendingAgeSeconds()).isZero();

    assertThat(meters.count("mic.outbox.events.dispatched", "order.created")).isEqualTo(3);
    assertThat(meters.count("mic.outbox.events.dispatched", "stock.reserved")).isEqualTo(1);
    assertThat(meters.count("mic.outbox.events.dispatched", "payment.failed")).isZero();
    assertThat(meters.count("mic.outbox.events.retried", "payment.failed")).isEqualTo(2);
    assertThat(meters.count("mic.outbox.events.retried", "order.created")).isZero();
    assertThat(meters.count("mic.outbox.events.dead.lettered", "payment.failed")).isEqualTo(2);
    assertThat(meters.count("mic.outbox.events.released", "stock.reserved")).isEqualTo(1);
    assertThat(meters.total("mic.outbox.events.lease.lost")).isZero();
    assertThat(meters.timerCount("mic.outbox.publish", "order.created")).isEqualTo(3);
    assertThat(meters.timerCount("mic.outbox.publish", "stock.reserved")).isEqualTo(1);
    assertThat(meters.timerCount("mic.outbox.publish", "payment.failed")).isZero();
    assertThat(meters.timerCount("mic.outbox.batch", null)).isEqualTo(2);
    assertThat(meters.total("mic.outbox.poll.failed")).isZero();

    meters.assertNoTagBeyond(Set.of("topic", "status", "reason"),
        Set.of("customer", "agg-a1", "agg-a2", "agg-a3", "agg-b1", "agg-b2", "agg-c1", "{\"secret\":1}"));
  }

  @Test
  void countsTheLeaseLostWhenAnotherWorkerTookTheEventOver() {
    store.append(event("order.created", "agg-1", 0));
    OutboxDispatcher other = OutboxDispatcher.builder().store(store).useClaim(true).name("other")
        .listener(metrics.listener()).dispatchFn(e -> {}).build();
    AtomicBoolean first = new AtomicBoolean(true);
    OutboxDispatcher slow = OutboxDispatcher.builder().store(store).useClaim(true).name("slow")
        .leaseTtl(Duration.ofSeconds(1)).listener(metrics.listener())
        .dispatchFn(e -> {
          if (first.getAndSet(false)) {
            storeClock.advance(Duration.ofSeconds(2)); // this publication outlives its lease…
            assertThat(other.dispatchOnce().dispatched()).isEqualTo(1); // …and another worker takes over
          }
        })
        .build();

    assertThat(slow.dispatchOnce()).isEqualTo(new DispatchResult(1, 0, 0, 0, 0, 1));

    assertThat(meters.count("mic.outbox.events.lease.lost", "order.created")).isEqualTo(1);
    assertThat(meters.count("mic.outbox.events.dispatched", "order.created")).isEqualTo(1);
    assertThat(meters.status(DISPATCHED)).isEqualTo(1);
  }

  @Test
  void countsExactlyWhatSeveralAsyncWorkersDispatch() {
    for (int i = 0; i < 120; i++) {
      store.append(event(i % 3 == 0 ? "order.cancelled" : "order.created", "agg-" + i, 0));
    }
    try (AsyncOutboxDispatcher async = AsyncOutboxDispatcher.builder().store(counting).dispatchFn(e -> {})
        .useClaim(true).workers(4).batchSize(7).pollInterval(Duration.ofMillis(10))
        .listener(metrics.listener()).build()) {
      async.start();
      await().atMost(Duration.ofSeconds(20))
          .until(() -> meters.total("mic.outbox.events.dispatched") == 120);
    }
    assertThat(meters.count("mic.outbox.events.dispatched", "order.created")).isEqualTo(80);
    assertThat(meters.count("mic.outbox.events.dispatched", "order.cancelled")).isEqualTo(40);
    assertThat(meters.timerCount("mic.outbox.publish", "order.created")).isEqualTo(80);
    assertThat(meters.total("mic.outbox.events.lease.lost")).isZero();
    assertThat(meters.status(DISPATCHED)).isEqualTo(120);
    assertThat(meters.status(PENDING)).isZero();
  }

  @Test
  void processingGaugeShowsEventsUnderLease() throws Exception {
    store.append(List.of(event("order.created", "agg-1", 0), event("order.created", "agg-2", 0)));
    CountDownLatch release = new CountDownLatch(1);
    try (AsyncOutboxDispatcher async = AsyncOutboxDispatcher.builder().store(counting)
        .dispatchFn(e -> release.await()).useClaim(true).pollInterval(Duration.ofMillis(10))
        .listener(metrics.listener()).build()) {
      async.start();
      await().atMost(Duration.ofSeconds(10)).until(() -> {
        meterClock.add(REFRESH);
        return meters.status(PROCESSING) == 2;
      });
      assertThat(meters.status(PENDING)).isZero();
      assertThat(meters.oldestPendingAgeSeconds()).isZero(); // the store clock has not moved
      storeClock.advance(Duration.ofSeconds(5));
      meterClock.add(REFRESH);
      assertThat(meters.oldestPendingAgeSeconds()).as("events under lease are still waiting").isEqualTo(5.0);
      release.countDown();
      await().atMost(Duration.ofSeconds(10)).until(() -> meters.total("mic.outbox.events.dispatched") == 2);
    }
    meterClock.add(REFRESH);
    assertThat(meters.status(PROCESSING)).isZero();
    assertThat(meters.status(DISPATCHED)).isEqualTo(2);
  }

  @Test
  void gaugesReadTheStoreAtMostOncePerRefreshInterval() throws Exception {
    store.append(event("order.created", "agg-1", 0));
    assertThat(counting.countByStatus.get()).as("building the binding reads nothing").isZero();

    for (int i = 0; i < 50; i++) {
      meters.scrape();
    }
    ExecutorService pool = Executors.newFixedThreadPool(8);
    try {
      List<Future<?>> scrapes = new ArrayList<>();
      for (int i = 0; i < 200; i++) {
        scrapes.add(pool.submit(meters::scrape));
      }
      for (Future<?> f : scrapes) {
        f.get(10, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(counting.countByStatus.get()).isEqualTo(1);
    assertThat(counting.oldestPendingAge.get()).isEqualTo(1);
    assertThat(counting.oldestTransactionAge.get()).isEqualTo(1);

    meterClock.add(REFRESH.minusMillis(1));
    meters.scrape();
    assertThat(counting.countByStatus.get()).isEqualTo(1);

    meterClock.add(Duration.ofMillis(1));
    meters.scrape();
    meters.scrape();
    assertThat(counting.countByStatus.get()).isEqualTo(2);
    assertThat(counting.oldestPendingAge.get()).isEqualTo(2);
    assertThat(counting.oldestTransactionAge.get()).isEqualTo(2);
  }

  @Test
  void anUnreadableStoreGivesNaNAndIsRetriedOnlyAfterTheInterval() {
    store.append(event("order.created", "agg-1", 0));
    counting.failReads = true;

    assertThat(meters.status(PENDING)).isNaN();
    assertThat(meters.oldestPendingAgeSeconds()).isNaN();
    assertThat(meters.oldestTransactionAgeSeconds()).isNaN();
    meters.scrape();
    assertThat(counting.countByStatus.get()).isEqualTo(1);
    assertThat(counting.oldestPendingAge.get()).isEqualTo(1);
    assertThat(counting.oldestTransactionAge.get()).isEqualTo(1);

    counting.failReads = false;
    assertThat(meters.status(PENDING)).as("the failure is remembered for one interval").isNaN();
    meterClock.add(REFRESH);
    assertThat(meters.status(PENDING)).isEqualTo(1);
    assertThat(meters.oldestPendingAgeSeconds()).isZero();
    assertThat(meters.oldestTransactionAgeSeconds()).isZero();
  }

  @Test
  void aGaugeCountsTheAggregatesHeldBehindADeadEvent() {
    store.append(List.of(event("order.created", "agg-1", 0), event("order.created", "agg-1", 0),
        event("order.created", "agg-2", 0), event("order.created", "agg-3", 0)));
    OutboxDispatcher.builder().store(counting).dispatchFn(e -> {
      if (!e.aggregateId().equals("agg-3")) {
        throw new IllegalArgumentException("rejected by the broker");
      }
    }).useClaim(true).maxAttempts(1).preserveAggregateOrder(true).holdAggregateOnDeadLetter(true).build()
        .dispatchOnce();

    assertThat(registry.find("mic.outbox.aggregates.held").gauge().value())
        .as("agg-1 waits behind its dead event; agg-2 has nothing waiting").isEqualTo(1);
    counting.failReads = true;
    meterClock.add(REFRESH);
    assertThat(registry.find("mic.outbox.aggregates.held").gauge().value()).isNaN();
  }

  @Test
  void closeRemovesTheGaugesOnly() {
    store.append(event("order.created", "agg-1", 0));
    OutboxDispatcher.builder().store(store).dispatchFn(e -> {}).listener(metrics.listener()).build()
        .dispatchOnce();

    metrics.close();
    metrics.close();

    assertThat(registry.find("mic.outbox.events").gauges()).isEmpty();
    assertThat(registry.find("mic.outbox.oldest.pending.age").meters()).isEmpty();
    assertThat(registry.find("mic.outbox.oldest.transaction.age").meters()).isEmpty();
    assertThat(registry.find("mic.outbox.aggregates.held").meters()).isEmpty();
    assertThat(meters.count("mic.outbox.events.dispatched", "order.created")).isEqualTo(1);
    assertThat(counting.countByStatus.get()).isZero();
    // the names are free again for a new binding
    MicrometerOutboxMetrics.builder().registry(registry).store(store).build().close();
  }

  @Test
  void withoutAStoreOnlyCountersAndTimersAreRegistered() {
    SimpleMeterRegistry own = new SimpleMeterRegistry();
    MicrometerOutboxMetrics listenerOnly = MicrometerOutboxMetrics.builder().registry(own).build();
    store.append(event("order.created", "agg-1", 0));
    OutboxDispatcher.builder().store(store).dispatchFn(e -> {}).listener(listenerOnly.listener()).build()
        .dispatchOnce();

    assertThat(own.find("mic.outbox.events").gauges()).isEmpty();
    assertThat(own.find("mic.outbox.events.dispatched").tag("topic", "order.created").counter().count())
        .isEqualTo(1);
    listenerOnly.close();
  }

  @Test
  void prefixAndTagApplyToEveryMeter() {
    SimpleMeterRegistry own = new SimpleMeterRegistry();
    MicrometerOutboxMetrics orders = MicrometerOutboxMetrics.builder().registry(own).store(store)
        .prefix("shop.outbox").tag("outbox", "orders").build();
    store.append(event("order.created", "agg-1", 0));
    OutboxDispatcher.builder().store(store).dispatchFn(e -> {}).listener(orders.listener()).build()
        .dispatchOnce();

    assertThat(own.getMeters()).isNotEmpty().allSatisfy(m -> {
      assertThat(m.getId().getName()).startsWith("shop.outbox.");
      assertThat(m.getId().getTag("outbox")).isEqualTo("orders");
    });
    assertThat(own.find("shop.outbox.events").tag("status", "DISPATCHED").gauge().value()).isEqualTo(1);
    assertThat(own.getMeters()).extracting(m -> m.getId().getName()).contains(
        "shop.outbox.events.dispatched", "shop.outbox.events.retried", "shop.outbox.events.dead.lettered",
        "shop.outbox.events.lease.lost", "shop.outbox.events.released", "shop.outbox.publish.stalled",
        "shop.outbox.publish", "shop.outbox.batch", "shop.outbox.poll.failed", "shop.outbox.events",
        "shop.outbox.oldest.pending.age", "shop.outbox.oldest.transaction.age", "shop.outbox.dead.tuples",
        "shop.outbox.aggregates.held");
    assertThat(own.find("shop.outbox.dead.tuples").gauge().value()).as("the in-memory store cannot tell").isNaN();
    assertThat(own.find("shop.outbox.oldest.pending.age").meter().getId().getType()).isEqualTo(Meter.Type.GAUGE);
    assertThat(own.find("shop.outbox.oldest.transaction.age").meter().getId().getType())
        .isEqualTo(Meter.Type.GAUGE);
    orders.close();
  }

  @Test
  void aSecondBindingWithTheSameNamesIsRefused() {
    assertThatThrownBy(() -> MicrometerOutboxMetrics.builder().registry(registry).store(store).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageStartingWith("the registry already has outbox gauges named mic.outbox.* with tags []")
        .hasMessageEndingWith("give each store its own .prefix(...) or .tag(...)");
    MicrometerOutboxMetrics second =
        MicrometerOutboxMetrics.builder().registry(registry).store(store).tag("outbox", "billing").build();
    assertThat(registry.find("mic.outbox.events").tag("outbox", "billing").gauges()).hasSize(4);
    second.close();
  }

  @Test
  void builderNamesTheOptionThatIsWrong() {
    assertThatThrownBy(() -> MicrometerOutboxMetrics.builder().build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("registry is required: .registry(meterRegistry)");
    assertThatThrownBy(() -> MicrometerOutboxMetrics.builder().registry(registry).prefix("Mic Outbox").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("prefix must be dot-separated lowercase words such as mic.outbox, was Mic Outbox");
    assertThatThrownBy(() -> MicrometerOutboxMetrics.builder().registry(registry).prefix("mic.").build())
        .hasMessageEndingWith("was mic.");
    assertThatThrownBy(() -> MicrometerOutboxMetrics.builder().registry(registry).gaugeRefresh(Duration.ZERO)
        .build()).isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("gaugeRefresh must be > 0, was PT0S");
    assertThatThrownBy(() -> MicrometerOutboxMetrics.builder().registry(registry).tag("topic", "x").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("tag key topic is set by the binding itself; choose another key");
    assertThatThrownBy(() -> MicrometerOutboxMetrics.builder().registry(registry).tag(" ", "x").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("tag needs a non-blank key and a value, was  =x");
    assertThat(MicrometerOutboxMetrics.DEFAULT_PREFIX).isEqualTo("mic.outbox");
    assertThat(MicrometerOutboxMetrics.DEFAULT_GAUGE_REFRESH).isEqualTo(Duration.ofSeconds(10));
  }
}
