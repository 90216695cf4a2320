package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.internal.Channels;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.ChannelDispatchFn;
import io.mic.outbox.spi.DispatchDecorator;
import io.mic.outbox.testkit.CapturedStderr;
import io.mic.outbox.testkit.OffsetClock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How a pipelined worker uses its publisher's {@link BatchChannel}: in throughput mode it sends the next batch
 * before it settles the last one when the channel can overlap them, never more than two at once, and each
 * batch's outcomes stay its own; otherwise it settles each batch before sending the next.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class BatchChannelTest {
  private static final int BATCH = 5;

  private final InMemoryOutboxStore store = new InMemoryOutboxStore(new OffsetClock());

  /** What the worker did, in order: "send 1", "settle 1", and how many batches were sent and not settled. */
  private final List<String> log = new CopyOnWriteArrayList<>();
  private final AtomicInteger unsettled = new AtomicInteger();
  private final AtomicInteger mostUnsettled = new AtomicInteger();

  private List<OutboxEvent> appendBatches(int batches) {
    List<OutboxEvent> events = IntStream.range(0, batches * BATCH).mapToObj(n -> OutboxEvent.builder()
        .aggregate("order", "o-" + n).topic("order.created").payload("{}").build()).toList();
    store.append(events);
    return events;
  }

  /**
   * A publisher whose channel returns from {@code send} at once and hands over the outcomes when asked: the
   * events of {@code failing} fail, with an exception naming the batch they were sent in.
   */
  private ChannelDispatchFn publisher(boolean overlapping, Set<UUID> failing) {
    return publisher(overlapping, failing, 0);
  }

  /** {@link #publisher(boolean, Set)} whose send of batch {@code downAt} finds the broker unreachable. */
  private ChannelDispatchFn publisher(boolean overlapping, Set<UUID> failing, int downAt) {
    return new ChannelDispatchFn() {
      @Override
      public void dispatch(OutboxEvent event) {
        throw new AssertionError("the worker publishes whole batches");
      }

      @Override
      public BatchChannel channel() {
        AtomicInteger sends = new AtomicInteger();
        return new BatchChannel() {
          @Override
          public Sent send(List<OutboxEvent> events) {
            int n = sends.incrementAndGet();
            log.add("send " + n);
            if (n == downAt) {
              throw new PublishUnavailableException("broker unreachable", null);
            }
            mostUnsettled.accumulateAndGet(unsettled.incrementAndGet(), Math::max);
            Map<UUID, Exception> failures = new HashMap<>();
            events.stream().filter(e -> failing.contains(e.id()))
                .forEach(e -> failures.put(e.id(), new IllegalStateException("refused in batch " + n)));
            return () -> {
              log.add("settle " + n);
              unsettled.decrementAndGet();
              return failures;
            };
          }

          @Override
          public boolean overlapping() {
            return overlapping;
          }
        };
      }
    };
  }

  private List<String> alternating(int batches) {
    List<String> expected = new ArrayList<>();
    for (int n = 1; n <= batches; n++) {
      expected.add("send " + n);
      expected.add("settle " + n);
    }
    return expected;
  }

  /** Runs a dispatcher until {@code dispatched} events are dispatched, then closes it; failures wait an hour. */
  private void drain(AsyncOutboxDispatcher.Builder builder, int dispatched) {
    try (AsyncOutboxDispatcher d = builder.store(store).batchSize(BATCH).pollInterval(Duration.ofMillis(10))
        .retryBackoff(Duration.ofHours(1), Duration.ofHours(1)).build()) {
      d.start();
      await().atMost(Duration.ofSeconds(20))
          .until(() -> store.countByStatus().getOrDefault(OutboxStatus.DISPATCHED, 0L) == dispatched);
    }
  }

  @Test
  void anOverlappingChannelGetsTheNextBatchBeforeTheLastIsSettled() {
    List<OutboxEvent> events = appendBatches(4);
    drain(AsyncOutboxDispatcher.builder().dispatchFn(publisher(true, Set.of())), events.size());

    assertThat(log).containsExactly("send 1", "send 2", "settle 1", "send 3", "settle 2", "send 4", "settle 3",
        "settle 4");
    assertThat(mostUnsettled.get()).as("batches sent and not settled at once").isEqualTo(2);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, (long) events.size());
  }

  @Test
  void eachBatchKeepsItsOwnOutcomesWhenTheyOverlap() {
    List<OutboxEvent> events = appendBatches(3);
    OutboxEvent first = events.get(2);
    OutboxEvent second = events.get(BATCH + 4);
    List<String> retried = new CopyOnWriteArrayList<>();
    drain(AsyncOutboxDispatcher.builder().dispatchFn(publisher(true, Set.of(first.id(), second.id())))
        .listener(new OutboxListener() {
          @Override
          public void onRetryScheduled(OutboxEvent event, Duration delay, String error) {
            retried.add(event.id() + ": " + error);
          }
        }), events.size() - 2);

    assertThat(retried).containsExactlyInAnyOrder(first.id() + ": java.lang.IllegalStateException: refused in batch 1",
        second.id() + ": java.lang.IllegalStateException: refused in batch 2");
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, (long) events.size() - 2)
        .containsEntry(OutboxStatus.PENDING, 2L);
    assertThat(store.find(first.id()).orElseThrow().attempts()).isEqualTo(1);
    assertThat(store.find(second.id()).orElseThrow().attempts()).isEqualTo(1);
  }

  /**
   * The broker is gone when the second batch is sent: the first, sent before, is settled and marked all the
   * same, and the second goes back untried while the worker waits for the broker.
   */
  @Test
  void aSendThatFindsTheBrokerGoneStillSettlesTheBatchBeforeIt() {
    List<OutboxEvent> events = appendBatches(3);
    drain(AsyncOutboxDispatcher.builder().dispatchFn(publisher(true, Set.of(), 2)), BATCH);

    assertThat(log).containsExactly("send 1", "send 2", "settle 1");
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, (long) BATCH)
        .containsEntry(OutboxStatus.PENDING, 2L * BATCH);
    assertThat(events.subList(BATCH, 3 * BATCH)).allSatisfy(e ->
        assertThat(store.find(e.id()).orElseThrow().attempts()).as("attempts of an event not sent").isZero());
  }

  @Test
  void orderedModeSettlesEachBatchBeforeSendingTheNext() {
    List<OutboxEvent> events = appendBatches(3);
    drain(AsyncOutboxDispatcher.builder().dispatchFn(publisher(true, Set.of())).preserveAggregateOrder(true),
        events.size());

    assertThat(log).containsExactlyElementsOf(alternating(3));
    assertThat(mostUnsettled.get()).isEqualTo(1);
  }

  @Test
  void aChannelWhoseSendWaitsIsSettledBeforeTheNextBatch() {
    List<OutboxEvent> events = appendBatches(3);
    drain(AsyncOutboxDispatcher.builder().dispatchFn(publisher(false, Set.of())), events.size());

    assertThat(log).containsExactlyElementsOf(alternating(3));
    assertThat(mostUnsettled.get()).isEqualTo(1);
  }

  @Test
  void aBatchPublisherWithoutAChannelIsSentEachBatchWithDispatchBatch() throws Exception {
    List<List<OutboxEvent>> batches = new CopyOnWriteArrayList<>();
    BatchDispatchFn publisher = new BatchDispatchFn() {
      @Override
      public void dispatch(OutboxEvent event) {}

      @Override
      public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        batches.add(events);
        return Map.of(events.get(0).id(), new IllegalStateException("refused"));
      }
    };
    List<OutboxEvent> events = appendBatches(1);
    try (BatchChannel channel = Channels.open(publisher)) {
      BatchChannel.Sent sent = channel.send(events);
      assertThat(batches).containsExactly(events);
      assertThat(sent.outcomes()).containsOnlyKeys(events.get(0).id());
      assertThat(channel.overlapping()).isFalse();
    }
  }

  /**
   * A wrapper written by hand that forwards {@code dispatchBatch} but not the channel hides it: the worker settles
   * each batch before sending the next, and a warning names the wrapper and the fix.
   */
  @Test
  void aWrapperThatHidesAnOverlappingChannelIsReported() throws Exception {
    List<OutboxEvent> events = appendBatches(2);
    ChannelDispatchFn inner = publisher(true, Set.of());
    BatchDispatchFn hiding = new BatchDispatchFn() {
      @Override
      public void dispatch(OutboxEvent event) throws Exception {
        inner.dispatch(event);
      }

      @Override
      public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> batch) throws Exception {
        return inner.dispatchBatch(batch);
      }
    };
    String stderr = CapturedStderr.during(() -> drain(AsyncOutboxDispatcher.builder().dispatchFn(hiding), events.size()));

    assertThat(log).as("each batch through a channel of its own").containsExactly("send 1", "settle 1", "send 1",
        "settle 1");
    assertThat(stderr).containsOnlyOnce(" WARN ").contains(hiding.getClass().getName() + " wraps "
        + inner.getClass().getName() + " but not its channel").contains("io.mic.outbox.spi.DispatchDecorator.wrap");
  }

  /** The same wrapper built with a {@link DispatchDecorator} is a channel publisher too: its batches overlap. */
  @Test
  void aWrapperBuiltWithADecoratorKeepsTheChannel() throws Exception {
    List<OutboxEvent> events = appendBatches(4);
    List<Integer> decorated = new CopyOnWriteArrayList<>();
    DispatchDecorator counting = (batch, next) -> {
      decorated.add(batch.size());
      return next.send(batch);
    };
    DispatchFn wrapped = counting.wrap(publisher(true, Set.of()));
    String stderr = CapturedStderr.during(() -> drain(AsyncOutboxDispatcher.builder().dispatchFn(wrapped),
        events.size()));

    assertThat(wrapped).isInstanceOf(ChannelDispatchFn.class);
    assertThat(log).containsExactly("send 1", "send 2", "settle 1", "send 3", "settle 2", "send 4", "settle 3",
        "settle 4");
    assertThat(decorated).containsExactly(BATCH, BATCH, BATCH, BATCH);
    assertThat(stderr).doesNotContain(" WARN ");
  }
}
