package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.BrokerProbe;
import io.mic.outbox.spi.ChannelDispatchFn;
import io.mic.outbox.spi.DispatchDecorator;
import io.mic.outbox.testkit.OffsetClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A worker waiting out a broker outage asks the publisher's {@link BrokerProbe}: it resumes within moments of the
 * broker's return, however long its backoff has grown, and a probe that never saw the broker down changes
 * nothing.
 */
class BrokerProbeTest {
  private static final DispatchDecorator PASS_THROUGH = (events, next) -> next.send(events);

  private final InMemoryOutboxStore store = new InMemoryOutboxStore(new OffsetClock());

  /** A broker that is down while {@link #down} holds; its probe says so unless told to always say ready. */
  static final class Broker implements DispatchFn, BrokerProbe {
    final AtomicBoolean down = new AtomicBoolean(true);
    final AtomicInteger publications = new AtomicInteger();
    final AtomicLong firstPublishedNanos = new AtomicLong();
    final AtomicInteger probes = new AtomicInteger();
    private final boolean alwaysReady;

    Broker(boolean alwaysReady) {
      this.alwaysReady = alwaysReady;
    }

    @Override
    public void dispatch(OutboxEvent event) {
      publications.incrementAndGet();
      if (down.get()) {
        throw new PublishUnavailableException("connection refused");
      }
      firstPublishedNanos.compareAndSet(0, System.nanoTime());
    }

    @Override
    public boolean ready() {
      probes.incrementAndGet();
      return alwaysReady || !down.get();
    }
  }

  @ParameterizedTest(name = "wrapped: {0}")
  @ValueSource(booleans = {false, true})
  void aWorkerResumesWithinASecondOfTheBrokersReturnWhateverItsBackoff(boolean wrapped) {
    appendBacklog(500);
    Broker broker = new Broker(false);
    // releases wait 200 ms; the outage waits double from 200 ms: 0.2, 0.4, … 6.4 s, so a worker that only
    // slept would try again about 6 s after the broker's return
    try (AsyncOutboxDispatcher d = dispatcher(wrapped ? PASS_THROUGH.wrap(broker) : broker)) {
      d.start();
      await().atMost(Duration.ofSeconds(5)).until(() -> broker.publications.get() >= 1);
      long down = System.nanoTime();
      await().atMost(Duration.ofSeconds(20)).until(() -> System.nanoTime() - down > 6_500_000_000L); // the outage
      int triedWhileDown = broker.publications.get();
      broker.down.set(false);
      long back = System.nanoTime();
      await().atMost(Duration.ofSeconds(15)).until(() -> broker.firstPublishedNanos.get() != 0);
      Duration resumedAfter = Duration.ofNanos(broker.firstPublishedNanos.get() - back);
      assertThat(resumedAfter).as("first publication after the broker's return").isLessThan(Duration.ofSeconds(1));
      assertThat(triedWhileDown).as("publications tried in a 6.5 s outage: the backoff still holds").isLessThan(10);
      assertThat(broker.probes.get()).as("the probe was asked while waiting").isGreaterThan(5);
      await().atMost(Duration.ofSeconds(15))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == 500L);
    }
  }

  @Test
  void aProbeThatNeverSawTheBrokerDownLeavesTheBackoffAsItWas() {
    appendBacklog(100);
    Broker broker = new Broker(true);
    try (AsyncOutboxDispatcher d = dispatcher(broker)) {
      d.start();
      await().atMost(Duration.ofSeconds(5)).until(() -> broker.publications.get() >= 1);
      long down = System.nanoTime();
      await().atMost(Duration.ofSeconds(20)).until(() -> System.nanoTime() - down > 3_000_000_000L); // the outage
      // backoff 0.2, 0.4, 0.8, 1.6 s: about 5 tries in 3 s, where a probe trusted blindly would allow 12
      assertThat(broker.publications.get()).as("publications tried in a 3 s outage").isLessThanOrEqualTo(7);
      broker.down.set(false);
      await().atMost(Duration.ofSeconds(15))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == 100L);
    }
  }

  @Test
  void aDecoratorKeepsTheProbeOfEveryKindOfPublisher() throws Exception {
    Broker single = new Broker(false);
    single.down.set(false);
    class Batches implements BatchDispatchFn, BrokerProbe {
      @Override public void dispatch(OutboxEvent event) {}
      @Override public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        return Map.of();
      }
      @Override public boolean ready() {
        return true;
      }
    }
    class Channels extends Batches implements ChannelDispatchFn {
      @Override public BatchChannel channel() {
        return events -> Map::of;
      }
    }
    for (DispatchFn publisher : List.of(single, new Batches(), new Channels())) {
      DispatchFn twiceWrapped = PASS_THROUGH.wrap(PASS_THROUGH.wrap(publisher));
      assertThat(BrokerProbe.of(twiceWrapped)).as("probe of %s, wrapped twice", publisher).isSameAs(publisher);
      assertThat(BrokerProbe.of(twiceWrapped).ready()).isTrue();
    }
    assertThat(BrokerProbe.of(PASS_THROUGH.wrap(event -> {}))).as("a publisher without a probe").isNull();
  }

  private AsyncOutboxDispatcher dispatcher(DispatchFn publisher) {
    return AsyncOutboxDispatcher.builder().store(store).useClaim(true).batchSize(50)
        .pollInterval(Duration.ofMillis(50)).retryBackoff(Duration.ofMillis(200), Duration.ofSeconds(30))
        .dispatchFn(publisher).build();
  }

  private void appendBacklog(int events) {
    List<OutboxEvent> backlog = new ArrayList<>();
    for (int i = 0; i < events; i++) {
      backlog.add(OutboxEvent.builder().aggregate("order", "o-" + i).topic("order.created").payload("{}").build());
    }
    store.append(backlog);
  }
}
