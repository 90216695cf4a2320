package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.ChannelDispatchFn;
import io.mic.outbox.spi.DispatchDecorator;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The publisher's channel for one worker: a batch is sent without waiting for its PubAcks, the next one
 * follows on the same connection and in the same window, and each batch's outcomes are its own.
 */
class NatsChannelTest {
  @RegisterExtension final TestStream stream = new TestStream();

  private List<OutboxEvent> events(int count, String topic) {
    return IntStream.range(0, count).mapToObj(n -> OutboxEvent.builder().aggregate("order", "o-" + n)
        .topic(topic).payload("{\"n\":" + n + "}").build()).toList();
  }

  private List<OutboxEvent> events(int count) {
    return events(count, stream.name() + ".a");
  }

  private static List<UUID> ids(List<OutboxEvent> events) {
    return events.stream().map(OutboxEvent::id).toList();
  }

  /**
   * Over a connection that carries nothing any more, two batches are sent without waiting for a PubAck, both on
   * the one connection, which two overlapping dispatchBatch calls would not share; each then times out alone.
   */
  @Test
  void theNextBatchGoesOutBeforeTheLastIsAcknowledgedOnTheSameConnection() throws Exception {
    Duration ackTimeout = Duration.ofSeconds(2);
    try (BlackholeProxy proxy = BlackholeProxy.to(NatsTestServer.url());
        NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(proxy.url()).connections(2)
            .ackTimeout(ackTimeout).build();
        BatchChannel channel = publisher.channel()) {
      assertThat(channel.overlapping()).isTrue();
      assertThat(channel.send(events(1)).outcomes()).isEmpty(); // opens the first connection
      proxy.blackholeOpenConnections();

      List<OutboxEvent> first = events(3);
      List<OutboxEvent> second = events(2);
      long start = System.nanoTime();
      BatchChannel.Sent sentFirst = channel.send(first);
      BatchChannel.Sent sentSecond = channel.send(second);
      assertThat(Duration.ofNanos(System.nanoTime() - start)).as("both sent without a PubAck").isLessThan(ackTimeout);
      assertThat(proxy.acceptedConnections()).as("the second batch shares the first one's connection").isEqualTo(1);

      Map<UUID, Exception> firstFailures = sentFirst.outcomes();
      assertThat(firstFailures).containsOnlyKeys(ids(first));
      assertThat(firstFailures.values()).allSatisfy(e -> assertThat(e).isInstanceOf(PublishUnavailableException.class)
          .hasMessageContaining("no PubAck"));
      assertThat(sentSecond.outcomes()).containsOnlyKeys(ids(second));
    }
    assertThat(stream.messages()).isEqualTo(1);
  }

  /**
   * With a window of 4, a batch of 3 waiting for its PubAcks leaves room for one publication of the next: that
   * batch's send waits for the first batch's PubAcks (here until they time out), whose outcomes are then ready.
   */
  @Test
  void oneWindowSpansTheBatchesOfAChannel() throws Exception {
    Duration ackTimeout = Duration.ofSeconds(1);
    try (BlackholeProxy proxy = BlackholeProxy.to(NatsTestServer.url());
        NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(proxy.url()).maxPendingAcks(4)
            .ackTimeout(ackTimeout).build();
        BatchChannel channel = publisher.channel()) {
      assertThat(channel.send(events(1)).outcomes()).isEmpty();
      proxy.blackholeOpenConnections();

      List<OutboxEvent> first = events(3);
      BatchChannel.Sent sentFirst = channel.send(first);
      long start = System.nanoTime();
      BatchChannel.Sent sentSecond = channel.send(events(3));
      assertThat(Duration.ofNanos(System.nanoTime() - start)).as("the second send waited for the first's PubAcks")
          .isGreaterThanOrEqualTo(ackTimeout.minusMillis(100));
      assertThat(sentFirst.outcomes()).containsOnlyKeys(ids(first));
      assertThat(sentSecond.outcomes()).hasSize(3);
    }
  }

  /** Two batches in flight at once on a healthy connection: each gets the failures of its own events only. */
  @Test
  void overlappingBatchesKeepTheirOwnFailures() throws Exception {
    String noStream = "nostream-" + stream.name() + ".a";
    List<OutboxEvent> first = new ArrayList<>(events(50));
    first.set(10, events(1, noStream).get(0));
    List<OutboxEvent> second = new ArrayList<>(events(50));
    second.set(20, events(1, noStream).get(0));
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(NatsTestServer.url()).build();
        BatchChannel channel = publisher.channel()) {
      BatchChannel.Sent sentFirst = channel.send(first);
      BatchChannel.Sent sentSecond = channel.send(second);
      assertThat(sentFirst.outcomes()).containsOnlyKeys(first.get(10).id());
      assertThat(sentSecond.outcomes()).containsOnlyKeys(second.get(20).id());
    }
    assertThat(stream.messages()).isEqualTo(98);
  }

  /** A wrapper built with a {@link DispatchDecorator} forwards the channel: its batches still overlap. */
  @Test
  void aDecoratedPublisherKeepsItsOverlappingChannel() throws Exception {
    List<Integer> decorated = new ArrayList<>();
    DispatchDecorator counting = (events, next) -> {
      decorated.add(events.size());
      return next.send(events);
    };
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(NatsTestServer.url()).build()) {
      ChannelDispatchFn wrapped = (ChannelDispatchFn) counting.wrap(publisher);
      try (BatchChannel channel = wrapped.channel()) {
        assertThat(channel.overlapping()).isTrue();
        BatchChannel.Sent sentFirst = channel.send(events(30));
        BatchChannel.Sent sentSecond = channel.send(events(20));
        assertThat(sentFirst.outcomes()).isEmpty();
        assertThat(sentSecond.outcomes()).isEmpty();
      }
    }
    assertThat(decorated).containsExactly(30, 20);
    assertThat(stream.messages()).isEqualTo(50);
  }
}
