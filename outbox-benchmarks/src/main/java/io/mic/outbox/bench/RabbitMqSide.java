package io.mic.outbox.bench;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import java.nio.charset.StandardCharsets;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * RabbitMQ: a durable topic exchange and queue of their own; the raw client publishes persistent, mandatory
 * messages with publisher confirms and the same window of outstanding confirms.
 */
final class RabbitMqSide implements EndToEndBenchmark.Broker {
  private final String uri;
  private final int window;
  private final ConnectionFactory factory = new ConnectionFactory();
  private final Connection admin;
  private final Channel channel;
  private final Connection rawConnection;
  private final String exchange = "mic-bench-e2e-" + UUID.randomUUID().toString().substring(0, 8);
  private final String queue = exchange + "-q";

  RabbitMqSide(String uri, int window) throws Exception {
    this.uri = uri;
    this.window = window;
    factory.setUri(uri);
    admin = factory.newConnection("mic-bench-e2e-admin");
    channel = admin.createChannel();
    rawConnection = factory.newConnection("mic-bench-e2e-raw"); // made before the clock starts, like the publisher
    channel.exchangeDeclare(exchange, "topic", true);
    channel.queueDeclare(queue, true, false, false, null);
    channel.queueBind(queue, exchange, "#");
  }

  @Override
  public String describe() {
    return "RabbitMQ " + admin.getServerProperties().get("version") + " (durable queue, persistent messages,"
        + " publisher confirms, window " + window + ")";
  }

  @Override
  public String raw() {
    return "raw amqp-client, confirms, same messages and window (baseline)";
  }

  @Override
  public void publishRaw(List<OutboxEvent> events, String scenario) throws Exception {
    try (Channel ch = rawConnection.createChannel()) {
      publishConfirmed(ch, exchange, events, window);
    }
  }

  /**
   * The raw client's loop: persistent, mandatory messages with publisher confirms on {@code ch}, at most
   * {@code window} unconfirmed, each routed by its topic; returns once every confirm has arrived.
   */
  static void publishConfirmed(Channel ch, String exchange, List<OutboxEvent> events, int window) throws Exception {
    ch.confirmSelect();
    ConcurrentNavigableMap<Long, Boolean> outstanding = new ConcurrentSkipListMap<>();
    Semaphore permits = new Semaphore(window);
    AtomicInteger failed = new AtomicInteger();
    ch.addReturnListener(r -> failed.incrementAndGet());
    ch.addConfirmListener((tag, multiple) -> settle(outstanding, permits, tag, multiple),
        (tag, multiple) -> failed.addAndGet(settle(outstanding, permits, tag, multiple)));
    for (OutboxEvent e : events) {
      permits.acquire();
      outstanding.put(ch.getNextPublishSeqNo(), Boolean.TRUE);
      ch.basicPublish(exchange, e.topic(), true, properties(e), e.payload().getBytes(StandardCharsets.UTF_8));
    }
    if (!permits.tryAcquire(window, 60, TimeUnit.SECONDS)) {
      throw new IllegalStateException("confirms missing after 60 s");
    }
    if (failed.get() != 0) {
      throw new IllegalStateException(failed.get() + " raw publications failed");
    }
  }

  /** The message the publisher builds: persistent, JSON, message id, timestamp, the envelope headers. */
  private static AMQP.BasicProperties properties(OutboxEvent e) {
    Map<String, Object> headers = new LinkedHashMap<>(OutboxHeaders.of(e));
    return new AMQP.BasicProperties.Builder().messageId(e.id().toString()).contentType("application/json")
        .deliveryMode(2).timestamp(new Date()).headers(headers).build();
  }

  private static int settle(ConcurrentNavigableMap<Long, Boolean> outstanding, Semaphore permits, long tag,
      boolean multiple) {
    int n;
    if (multiple) {
      Map<Long, Boolean> done = outstanding.headMap(tag, true);
      n = done.size();
      done.clear();
    } else {
      n = outstanding.remove(tag) == null ? 0 : 1;
    }
    permits.release(n);
    return n;
  }

  @Override
  public EndToEndBenchmark.Publisher publisher() {
    RabbitMqPublisher p = RabbitMqPublisher.builder().uri(uri).exchange(exchange).confirmWindow(window).build();
    return new EndToEndBenchmark.Publisher(p, p);
  }

  @Override
  public void checkAndReset(int expected) throws Exception {
    long queued = channel.queuePurge(queue).getMessageCount();
    if (queued != expected) {
      throw new IllegalStateException("the queue held " + queued + " messages, expected " + expected);
    }
  }

  @Override
  public void close() throws Exception {
    try {
      channel.queueDelete(queue);
      channel.exchangeDelete(exchange);
    } finally {
      rawConnection.close();
      admin.close();
    }
  }
}
