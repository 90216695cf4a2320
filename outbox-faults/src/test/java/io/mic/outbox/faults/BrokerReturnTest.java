package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.DispatchDecorator;
import io.nats.client.Connection;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Each broker (the suite's private one) stops for {@link #OUTAGE} while a backlog drains, then starts again:
 * the first publication must come within {@link #BOUND} of the broker's client port accepting connections again,
 * however long the dispatcher's backoff grew meanwhile, and nothing may be lost. The publisher is wrapped in a
 * {@link DispatchDecorator} (which records the publications), so the wrapper keeps the publisher's probe too.
 */
class BrokerReturnTest {
  static final Duration OUTAGE = Duration.ofSeconds(8);
  static final Duration BOUND = Duration.ofSeconds(2);
  static final int EVENTS = 20_000;
  static final Path FIGURES = Path.of("target", "faults", "broker-return.md");

  /** Stops or starts a broker. */
  interface Action {
    void run() throws Exception;
  }

  @Tag("fast")
  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void natsServerBack() throws Exception {
    PrivateNats nats = Servers.nats();
    String stream = unique("ret");
    nats.createStream(stream, Duration.ofMinutes(2));
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(nats.url())
        .ackTimeout(Duration.ofSeconds(2)).build()) {
      Set<UUID> published = drainAcrossOutage("nats", publisher, stream + ".created", nats.port(), nats::kill,
          nats::startServer);
      try (Connection c = nats.connect()) {
        assertThat(c.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount())
            .as("messages in the stream: each event once").isEqualTo(published.size());
        c.jetStreamManagement().deleteStream(stream);
      }
    }
  }

  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void rabbitMqNodeBack() throws Exception {
    PrivateRabbit rabbit = Servers.rabbit();
    String exchange = unique("ret");
    rabbit.declare(exchange);
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(rabbit.uri()).exchange(exchange)
        .confirmTimeout(Duration.ofSeconds(2)).connectTimeout(Duration.ofSeconds(2)).build()) {
      Set<UUID> published = drainAcrossOutage("rabbitmq", publisher, exchange, rabbit.port(), rabbit::stopApp,
          rabbit::startApp);
      Set<UUID> queued = new HashSet<>();
      rabbit.drain(exchange).forEach(d -> queued.add(d.eventId()));
      assertThat(queued).as("events in the queue").containsAll(published);
      rabbit.delete(exchange);
    }
  }

  /** The node stays up; a memory alarm blocks publishing for the outage: "accepts again" is when it is cleared. */
  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void rabbitMqAlarmCleared() throws Exception {
    PrivateRabbit rabbit = Servers.rabbit();
    String exchange = unique("alarm");
    rabbit.declare(exchange);
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(rabbit.uri()).exchange(exchange)
        .confirmTimeout(Duration.ofSeconds(2)).connectTimeout(Duration.ofSeconds(2)).build()) {
      try {
        Set<UUID> published = drainAcrossOutage("rabbitmq memory alarm", publisher, exchange, -1,
            rabbit::raiseMemoryAlarm, rabbit::clearMemoryAlarm);
        Set<UUID> queued = new HashSet<>();
        rabbit.drain(exchange).forEach(d -> queued.add(d.eventId()));
        assertThat(queued).as("events in the queue").containsAll(published);
      } finally {
        rabbit.clearMemoryAlarm();
      }
      rabbit.delete(exchange);
    }
  }

  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void kafkaBrokerBack() throws Exception {
    var kafka = Servers.kafka();
    String topic = unique("ret");
    Servers.createKafkaTopic(topic, 4);
    try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(kafka.bootstrap())
        .deliveryTimeout(Duration.ofSeconds(3)).requestTimeout(Duration.ofSeconds(1)).maxBlock(Duration.ofSeconds(1))
        .build()) {
      int port = Integer.parseInt(kafka.bootstrap().substring(kafka.bootstrap().lastIndexOf(':') + 1));
      Set<UUID> published = drainAcrossOutage("kafka", publisher, topic, port, kafka::kill, kafka::restart);
      Set<UUID> inTopic = new HashSet<>();
      Servers.readKafkaTopic(topic).forEach(d -> inTopic.add(d.eventId()));
      assertThat(inTopic).as("events in the topic").containsAll(published);
      Servers.deleteKafkaTopic(topic);
    }
  }

  /**
   * Drains {@link #EVENTS} through {@code publisher}, stops the broker once a tenth went out, starts it again after
   * {@link #OUTAGE}, and measures from its port accepting connections (without a {@code port}: from the end of
   * {@code start}) to the first acknowledged publication.
   *
   * @return every event id, all dispatched
   */
  private static Set<UUID> drainAcrossOutage(String broker, DispatchFn publisher, String topic, int port, Action stop,
      Action start) throws Exception {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    List<OutboxEvent> backlog = new ArrayList<>();
    for (int i = 0; i < EVENTS; i++) {
      backlog.add(OutboxEvent.builder().aggregate("order", "o-" + (i % 200)).topic(topic)
          .payload("{\"n\":" + i + "}").build());
    }
    store.append(backlog);
    AtomicLong acceptedAt = new AtomicLong();
    AtomicLong firstAcknowledged = new AtomicLong();
    DispatchDecorator recording = (events, next) -> {
      BatchChannel.Sent sent = next.send(events);
      return () -> {
        Map<UUID, Exception> failures = sent.outcomes();
        if (failures.size() < events.size() && acceptedAt.get() != 0) {
          firstAcknowledged.compareAndSet(0, System.nanoTime());
        }
        return failures;
      };
    };
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store)
        .dispatchFn(recording.wrap(publisher)).useClaim(true).preserveAggregateOrder(true).workers(2).build()) {
      dispatcher.start();
      Awaitility.await("a tenth published").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(5))
          .until(() -> dispatched(store) >= EVENTS / 10);
      stop.run();
      long stoppedAt = System.nanoTime();
      long pendingAtStop = EVENTS - dispatched(store);
      assertThat(pendingAtStop).as("events pending when the broker stopped").isPositive();
      Awaitility.await("the outage").atMost(OUTAGE.plusSeconds(30))
          .until(() -> System.nanoTime() - stoppedAt > OUTAGE.toNanos()); // the fault itself: its length
      Thread watcher = new Thread(() -> {
        while (!accepts(port)) {
          LockSupport.parkNanos(2_000_000);
        }
        acceptedAt.set(System.nanoTime());
      }, "accept-watcher");
      if (port > 0) {
        watcher.start();
      }
      start.run();
      if (port > 0) {
        watcher.join(TimeUnit.SECONDS.toMillis(30));
      } else {
        acceptedAt.set(System.nanoTime());
      }
      assertThat(acceptedAt.get()).as("the broker accepts connections again").isPositive();
      Awaitility.await("a publication after the broker's return").atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(10)).until(() -> firstAcknowledged.get() != 0);
      Duration back = Duration.ofNanos(firstAcknowledged.get() - acceptedAt.get());
      Awaitility.await("the backlog drained").atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(100))
          .until(() -> dispatched(store) == EVENTS);
      String figure = String.format("| %s | %d | %d ms | %d ms |%n", broker, pendingAtStop,
          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedAt), back.toMillis());
      Files.createDirectories(FIGURES.getParent());
      Files.writeString(FIGURES, figure, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
      System.out.print("broker return: " + figure);
      assertThat(back).as("first publication after %s accepts connections again", broker).isLessThanOrEqualTo(BOUND);
    }
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, (long) EVENTS)
        .containsEntry(OutboxStatus.DLQ, 0L);
    Set<UUID> ids = new HashSet<>();
    backlog.forEach(e -> ids.add(e.id()));
    return ids;
  }

  private static long dispatched(InMemoryOutboxStore store) {
    return store.countByStatus().get(OutboxStatus.DISPATCHED);
  }

  private static boolean accepts(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 100);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  private static String unique(String prefix) {
    return prefix + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  }
}
