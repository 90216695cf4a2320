package io.mic.outbox.rabbitmq;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class RabbitMqPublisherTest {
  private Connection admin;
  private Channel channel;
  private String exchange;
  private String queue;
  private final InMemoryOutboxStore store = new InMemoryOutboxStore();
  private final List<RabbitMqPublisher> publishers = new ArrayList<>();

  @BeforeEach
  void declare() throws Exception {
    admin = TestRabbit.connect();
    channel = admin.createChannel();
    exchange = TestRabbit.uniqueName();
    queue = exchange + "-q";
    channel.exchangeDeclare(exchange, "topic", false, true, null);
    channel.queueDeclare(queue, false, false, false, null);
    channel.queueBind(queue, exchange, "order.#");
  }

  @AfterEach
  void cleanUp() throws Exception {
    publishers.forEach(RabbitMqPublisher::close);
    channel.queueDelete(queue);
    channel.exchangeDelete(exchange);
    admin.close();
  }

  private RabbitMqPublisher publisher() {
    return track(RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange).build());
  }

  private RabbitMqPublisher track(RabbitMqPublisher p) {
    publishers.add(p);
    return p;
  }

  private static OutboxEvent event(String aggregateId, String topic, String payload) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload(payload).build();
  }

  private OutboxDispatcher dispatcher(RabbitMqPublisher publisher) {
    return OutboxDispatcher.builder().store(store).dispatchFn(publisher).batchSize(500).build();
  }

  private long queued() throws Exception {
    return channel.queueDeclarePassive(queue).getMessageCount();
  }

  /** Takes every message from the queue, in queue order. */
  private List<GetResponse> drainQueue(int expected) throws Exception {
    List<GetResponse> messages = new ArrayList<>();
    await().atMost(Duration.ofSeconds(10)).until(() -> queued() >= expected);
    GetResponse r;
    while ((r = channel.basicGet(queue, true)) != null) {
      messages.add(r);
    }
    return messages;
  }

  private static final String TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  @Test
  void aConsumerReceivesTheRoutingKeyThePropertiesTheHeadersAndThePayloadBytes() throws Exception {
    String payload = "{\"city\":\"Zürich\",\"note\":\"日本語 ✓ \\\"quoted\\\"\",\"amount\":12.50}";
    OutboxEvent event = OutboxEvent.builder().aggregate("order", "A-7").topic("order.created").payload(payload)
        .header("tenant", "acme").traceParent(TRACE).build();

    java.time.Instant before = java.time.Instant.now().truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
    publisher().dispatch(event);
    java.time.Instant after = java.time.Instant.now();

    GetResponse m = drainQueue(1).get(0);
    AMQP.BasicProperties p = m.getProps();
    assertThat(m.getEnvelope().getRoutingKey()).isEqualTo("order.created");
    assertThat(m.getEnvelope().getExchange()).isEqualTo(exchange);
    assertThat(m.getBody()).isEqualTo(payload.getBytes(UTF_8));
    assertThat(p.getMessageId()).isEqualTo(event.id().toString());
    assertThat(p.getContentType()).isEqualTo("application/json");
    assertThat(p.getDeliveryMode()).isEqualTo(2);
    assertThat(p.getTimestamp().toInstant()).isBetween(before, after); // not appended: no createdAt, so now
    Map<String, String> headers = new LinkedHashMap<>();
    p.getHeaders().forEach((k, v) -> headers.put(k, v.toString()));
    assertThat(headers).containsExactlyInAnyOrderEntriesOf(Map.of("tenant", "acme", "traceparent", TRACE,
        "x-event-id", event.id().toString(), "x-aggregate-type", "order", "x-aggregate-id", "A-7",
        "x-schema-version", "1"));
  }

  @Test
  void dispatchReturnsOnlyOnceTheQueueHoldsTheMessage() throws Exception {
    RabbitMqPublisher publisher = publisher();

    publisher.dispatch(event("1", "order.a", "{\"n\":1}"));
    long afterFirst = queued();
    publisher.dispatch(event("1", "order.a", "{\"n\":2}"));
    long afterSecond = queued();

    assertThat(afterFirst).isEqualTo(1);
    assertThat(afterSecond).isEqualTo(2);
  }

  @Test
  void aBatchOf500GoesThroughTheWindowInBatchOrderAndEveryEventIsMarked() throws Exception {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      events.add(event(Integer.toString(i), "order.batch", "{\"n\":" + i + "}"));
    }
    store.append(events);
    RabbitMqPublisher publisher = track(RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
        .confirmWindow(32).build());

    DispatchResult result = dispatcher(publisher).dispatchOnce();

    assertThat(result.dispatched()).isEqualTo(500);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 500L)
        .containsEntry(OutboxStatus.PENDING, 0L);
    List<String> queueOrder = drainQueue(500).stream().map(m -> m.getProps().getMessageId()).toList();
    assertThat(queueOrder).isEqualTo(events.stream().map(e -> e.id().toString()).toList());
  }

  @Test
  void onlyConfirmedEventsAreMarked_aNackIsReleasedWithoutAnAttempt() throws Exception {
    String full = exchange + "-full";
    channel.queueDeclare(full, false, false, false, Map.of("x-max-length", 3, "x-overflow", "reject-publish"));
    channel.queueBind(full, exchange, "capped.#");
    try {
      List<OutboxEvent> events = new ArrayList<>();
      for (int i = 0; i < 5; i++) {
        events.add(event(Integer.toString(i), "capped.x", "{\"n\":" + i + "}"));
      }
      store.append(events);

      DispatchResult result = dispatcher(publisher()).dispatchOnce();

      assertThat(result.dispatched()).isEqualTo(3);
      assertThat(result.released()).isEqualTo(2);
      assertThat(result.retried()).isZero();
      for (int i = 0; i < 5; i++) {
        OutboxEvent stored = store.find(events.get(i).id()).orElseThrow();
        assertThat(stored.status()).isEqualTo(i < 3 ? OutboxStatus.DISPATCHED : OutboxStatus.PENDING);
        assertThat(stored.attempts()).isEqualTo(i < 3 ? 1 : 0); // a publication counts; a release does not
      }
      assertThat(channel.queueDeclarePassive(full).getMessageCount()).isEqualTo(3);
      OutboxEvent fourth = events.get(3);
      assertThatThrownBy(() -> publisher().dispatch(fourth))
          .isInstanceOf(PublishUnavailableException.class)
          .hasMessage("RabbitMQ nacked event " + fourth.id() + " to exchange '" + exchange + "' with routing key"
              + " 'capped.x': the broker did not take it (a queue at its max-length with overflow reject-publish,"
              + " or a failed queue); the event waits without counting an attempt");
    } finally {
      channel.queueDelete(full);
    }
  }

  @Test
  void anUnroutableEventIsNeverDispatchedWhileRoutableOnesFlow() throws Exception {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      events.add(event(Integer.toString(i), i == 4 ? "nobody.listens" : "order.flow", "{\"n\":" + i + "}"));
    }
    store.append(events);
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher()).batchSize(100)
        .maxAttempts(3).retryBackoff(Duration.ofMillis(20), Duration.ofMillis(50)).build();

    DispatchResult first = dispatcher.dispatchOnce();

    assertThat(first.dispatched()).isEqualTo(9);
    assertThat(first.retried()).isEqualTo(1);
    OutboxEvent unroutable = store.find(events.get(4).id()).orElseThrow();
    assertThat(unroutable.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(unroutable.attempts()).isEqualTo(1);
    assertThat(unroutable.lastError()).contains(PublishRejectedException.class.getName())
        .contains("RabbitMQ returned event " + unroutable.id() + " to exchange '" + exchange + "' with routing key"
            + " 'nobody.listens' as unroutable (312 NO_ROUTE)");

    List<OutboxEvent> later = List.of(event("20", "order.flow", "{}"), event("21", "order.flow", "{}"));
    store.append(later);
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      dispatcher.dispatchOnce();
      return store.find(unroutable.id()).orElseThrow().status() == OutboxStatus.DLQ;
    });
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 11L)
        .containsEntry(OutboxStatus.DLQ, 1L).containsEntry(OutboxStatus.PENDING, 0L);
    assertThat(drainQueue(11)).extracting(m -> m.getProps().getMessageId())
        .doesNotContain(unroutable.id().toString()).hasSize(11);
  }

  @Test
  void aReturnIsReportedWithItsReplyCode() {
    OutboxEvent event = event("1", "nobody.listens", "{}");

    assertThatThrownBy(() -> publisher().dispatch(event))
        .isInstanceOfSatisfying(PublishRejectedException.class, e -> assertThat(e.code()).isEqualTo("312"))
        .hasMessage("RabbitMQ returned event " + event.id() + " to exchange '" + exchange + "' with routing key"
            + " 'nobody.listens' as unroutable (312 NO_ROUTE): no queue is bound for this routing key; bind one,"
            + " or give the exchange an alternate exchange");
  }

  @Test
  void theSameEventTwiceInOneBatchIsConfirmedTwiceAndAReturnedTwinIsMatchedToItsOwnMessage() throws Exception {
    OutboxEvent routable = event("1", "order.twice", "{}");
    OutboxEvent unroutable = event("2", "nobody.twice", "{}");

    Map<UUID, Exception> failures = publisher().dispatchBatch(List.of(routable, unroutable, routable, unroutable));

    assertThat(failures).containsOnlyKeys(unroutable.id());
    assertThat(failures.get(unroutable.id())).isInstanceOf(PublishRejectedException.class);
    assertThat(drainQueue(2)).extracting(m -> m.getProps().getMessageId())
        .containsExactly(routable.id().toString(), routable.id().toString());
  }

  @Test
  void aMissingExchangeIsReleasedWithoutAnAttemptAndTheChannelDoesNotPoisonLaterBatches() throws Exception {
    String missing = TestRabbit.uniqueName();
    RabbitMqPublisher publisher = track(RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(missing)
        .build());
    List<OutboxEvent> events = List.of(event("1", "order.a", "{}"), event("2", "order.a", "{}"),
        event("3", "order.a", "{}"));
    store.append(events);

    assertThatThrownBy(() -> publisher.dispatch(events.get(0)))
        .isInstanceOf(PublishUnavailableException.class)
        .hasMessageStartingWith("exchange '" + missing + "' does not exist, event " + events.get(0).id()
            + " to exchange '" + missing + "' with routing key 'order.a' not published (NOT_FOUND - no exchange '"
            + missing + "' in vhost '/'): declare the exchange");
    DispatchResult result = dispatcher(publisher).dispatchOnce();
    assertThat(result.released()).isEqualTo(3);
    assertThat(result.retried()).isZero();
    for (OutboxEvent e : events) {
      assertThat(store.find(e.id()).orElseThrow().attempts()).isZero();
    }

    channel.exchangeDeclare(missing, "topic", false, true, null);
    try {
      channel.queueBind(queue, missing, "#");
      Map<UUID, Exception> failures = publisher.dispatchBatch(events);
      assertThat(failures).isEmpty();
      assertThat(drainQueue(3)).hasSize(3);
    } finally {
      channel.exchangeDelete(missing);
    }
  }

  @Test
  void fourClaimingOrderedWorkersKeepEachAggregatesOrderOnTheQueue() throws Exception {
    int aggregates = 20;
    int perAggregate = 25;
    List<OutboxEvent> events = new ArrayList<>();
    for (int n = 0; n < perAggregate; n++) {
      for (int a = 0; a < aggregates; a++) {
        events.add(event("agg-" + a, "order.changed", "{\"n\":" + n + "}"));
      }
    }
    store.append(events);
    RabbitMqPublisher publisher = track(RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
        .confirmWindow(8).build());

    try (AsyncOutboxDispatcher async = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher)
        .useClaim(true).preserveAggregateOrder(true).workers(4).batchSize(50)
        .pollInterval(Duration.ofMillis(20)).build()) {
      async.start();
      await().atMost(Duration.ofSeconds(60))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == events.size());
    }

    Map<String, List<Integer>> seen = new LinkedHashMap<>();
    for (GetResponse m : drainQueue(events.size())) {
      String aggregate = m.getProps().getHeaders().get("x-aggregate-id").toString();
      String body = new String(m.getBody(), UTF_8);
      seen.computeIfAbsent(aggregate, k -> new ArrayList<>())
          .add(Integer.parseInt(body.replaceAll("\\D", "")));
    }
    List<Integer> expected = java.util.stream.IntStream.range(0, perAggregate).boxed().toList();
    assertThat(seen).hasSize(aggregates);
    seen.forEach((aggregate, order) -> assertThat(order).as(aggregate).isEqualTo(expected));
  }

  @Test
  void anUnreachableBrokerFailsAsUnavailableWithoutTheCredentials() throws Exception {
    List<OutboxEvent> events = List.of(event("1", "order.a", "{}"), event("2", "order.a", "{}"));
    store.append(events);
    RabbitMqPublisher publisher = track(RabbitMqPublisher.builder().uri("amqp://user:secret@127.0.0.1:1")
        .connectTimeout(Duration.ofMillis(500)).exchange(exchange).build());

    assertThatThrownBy(() -> publisher.dispatch(events.get(0)))
        .isInstanceOf(PublishUnavailableException.class)
        .hasMessageStartingWith("cannot connect to RabbitMQ at amqp://***@127.0.0.1:1 (java.net.ConnectException")
        .hasMessageNotContaining("secret");
    DispatchResult result = dispatcher(publisher).dispatchOnce();
    assertThat(result.released()).isEqualTo(2);
    assertThat(result.retried()).isZero();
  }

  @Test
  void aClosedPublisherFailsAsUnavailable() {
    RabbitMqPublisher publisher = publisher();
    publisher.close();

    assertThatThrownBy(() -> publisher.dispatch(event("1", "order.a", "{}")))
        .isInstanceOf(PublishUnavailableException.class)
        .hasMessage("the publisher is closed");
  }

  @Test
  void aConnectionFactoryIsCopiedAndARoutingKeyFunctionReplacesTheTopic() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(TestRabbit.uri());
    RabbitMqPublisher publisher = track(RabbitMqPublisher.builder().connectionFactory(factory).exchange(exchange)
        .routingKey(e -> "order." + e.aggregateId()).build());
    OutboxEvent event = event("77", "anything.else", "{}");

    publisher.dispatch(event);

    assertThat(publisher.routingKeyOf(event)).isEqualTo("order.77");
    assertThat(drainQueue(1).get(0).getEnvelope().getRoutingKey()).isEqualTo("order.77");
    assertThat(factory.isAutomaticRecoveryEnabled()).isTrue(); // the application's factory is untouched
  }

  @Test
  void aRoutingKeyLongerThan255BytesIsRejectedBeforeSendingAndTheRestOfTheBatchFlows() throws Exception {
    RabbitMqPublisher publisher = track(RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
        .routingKey(e -> e.aggregateId().equals("long") ? "order." + "x".repeat(300) : e.topic()).build());
    OutboxEvent tooLong = event("long", "order.a", "{}");
    OutboxEvent fine = event("fine", "order.a", "{}");

    Map<UUID, Exception> failures = publisher.dispatchBatch(List.of(tooLong, fine));

    assertThat(failures).containsOnlyKeys(tooLong.id());
    assertThat(failures.get(tooLong.id())).isInstanceOfSatisfying(PublishRejectedException.class,
        e -> assertThat(e.code()).isNull())
        .hasMessageEndingWith("a routing key must be 0 to 255 bytes of UTF-8");
    assertThat(drainQueue(1)).extracting(m -> m.getProps().getMessageId()).containsExactly(fine.id().toString());
  }

  @Test
  void theConnectTimeoutAlsoBoundsABrokerThatAcceptsTheConnectionButNeverAnswers() throws Exception {
    // a load balancer without a live broker behind it, or a broker still starting: TCP connects, AMQP is silent
    List<Socket> accepted = new CopyOnWriteArrayList<>();
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
      Thread acceptor = new Thread(() -> {
        try {
          while (true) {
            accepted.add(silent.accept());
          }
        } catch (IOException closed) {
          // the test is over
        }
      });
      acceptor.setDaemon(true);
      acceptor.start();
      RabbitMqPublisher publisher = track(RabbitMqPublisher.builder()
          .uri("amqp://guest:guest@127.0.0.1:" + silent.getLocalPort()).exchange(exchange)
          .connectTimeout(Duration.ofMillis(500)).build());

      long t0 = System.nanoTime();
      assertThatThrownBy(() -> publisher.dispatch(event("1", "order.created", "{}")))
          .isInstanceOf(PublishUnavailableException.class)
          .hasMessage("cannot connect to RabbitMQ at amqp://***@127.0.0.1:" + silent.getLocalPort()
              + " (java.util.concurrent.TimeoutException); events wait without counting attempts until it is"
              + " reachable");
      long millis = Duration.ofNanos(System.nanoTime() - t0).toMillis();

      assertThat(accepted).hasSize(1);
      assertThat(millis).as("connectTimeout 500 ms, waited %d ms", millis).isLessThan(1_500);
    } finally {
      for (Socket s : accepted) {
        s.close();
      }
    }
  }

  @Test
  void addressesSkipANodeThatRefusesAndPublishThroughTheNext() throws Exception {
    int closed;
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      closed = s.getLocalPort();
    }
    URI broker = URI.create(TestRabbit.uri());
    // the uri's own host is the closed port too: only the list can reach the broker
    String uri = broker.getScheme() + "://" + broker.getRawUserInfo() + "@127.0.0.1:" + closed
        + (broker.getRawPath() == null ? "" : broker.getRawPath());
    String addresses = "127.0.0.1:" + closed + ", " + broker.getHost() + ":" + broker.getPort();
    RabbitMqPublisher publisher = track(RabbitMqPublisher.builder().uri(uri).addresses(addresses)
        .exchange(exchange).build());
    OutboxEvent event = event("1", "order.created", "{\"n\":1}");

    assertThat(publisher.ready()).isTrue();
    publisher.dispatch(event); // returns once the broker confirmed it

    assertThat(drainQueue(1)).extracting(m -> m.getProps().getMessageId()).containsExactly(event.id().toString());
    assertThat(publisher).hasToString("RabbitMQ exchange " + exchange + " at amqp://127.0.0.1:" + closed + ","
        + broker.getHost() + ":" + broker.getPort() + "/%2F");
  }

  @Test
  void addressesThatAreNotHostPortPairsAreRefusedNamingTheEntryAndNeverThePassword() {
    String example = "e.g. .addresses(\"rabbit1:5672,rabbit2:5672,rabbit3:5672\")";
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").exchange("e").addresses(" ").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("addresses must name at least one host:port, " + example + ", was ' '; omit it to connect to"
            + " the host of uri(...)");
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").exchange("e")
        .addresses("rabbit1:5672,,rabbit3:5672").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("addresses entry 2 of 'rabbit1:5672,,rabbit3:5672' is empty: list host:port pairs separated"
            + " by commas, " + example);
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").exchange("e")
        .addresses("rabbit1:5672,rabbit2:70000").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("addresses entry 2 of 'rabbit1:5672,rabbit2:70000' is 'rabbit2:70000', not host:port with a"
            + " port from 1 to 65535: list host:port pairs separated by commas, " + example);
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").exchange("e")
        .addresses("rabbit1:5672;rabbit2:5672").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("addresses entry 1 of 'rabbit1:5672;rabbit2:5672' is 'rabbit1:5672;rabbit2:5672', not"
            + " host:port with a port from 1 to 65535: list host:port pairs separated by commas, " + example);
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").exchange("e")
        .addresses("amqp://u:secret@rabbit1:5672,rabbit2:5672").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("addresses must be host:port pairs separated by commas, not a URI: keep the credentials and"
            + " virtual host in uri(...) or the connectionFactory, and list the nodes here, " + example)
        .message().doesNotContain("secret");
    assertThatThrownBy(() -> RabbitMqPublisher.builder().exchange("e").addresses("rabbit1:5672").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("uri or connectionFactory is required: .uri(\"amqp://guest:guest@127.0.0.1:5672\") or"
            + " .connectionFactory(factory)");
  }

  @Test
  void addressesBesideAConnectionFactoryTakeItsCredentialsAndDefaultToItsTlsPort() throws Exception {
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(TestRabbit.uri());
    factory.setVirtualHost("/");
    factory.useSslProtocol();
    RabbitMqPublisher publisher = track(RabbitMqPublisher.builder().connectionFactory(factory)
        .addresses("rabbit1,[::1]:5673").exchange(exchange).build());

    assertThat(publisher).hasToString("RabbitMQ exchange " + exchange + " at amqps://rabbit1:5671,[::1]:5673/%2F");
  }

  @Test
  void aConfirmTimeoutTooLongToWaitForIsRefusedAtBuild() {
    // accepted, Long.MAX_VALUE ms made every event fail as rejected ("long overflow"), until the DLQ
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
        .confirmTimeout(Duration.ofMillis(Long.MAX_VALUE)).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("confirmTimeout must be > 0 and at most PT1H, was PT2562047788015H12M55.807S");
  }

  @Test
  void aConnectTimeoutBesideAConnectionFactoryIsRefusedRatherThanIgnored() {
    // the factory's own timeouts apply to its connections: a connectTimeout set beside it would do nothing
    assertThatThrownBy(() -> RabbitMqPublisher.builder().connectionFactory(new ConnectionFactory())
        .exchange(exchange).connectTimeout(Duration.ofMillis(500)).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("connectTimeout applies to a connection from uri; with connectionFactory, set the factory's"
            + " own timeouts (setConnectionTimeout, setHandshakeTimeout) instead");
  }

  @Test
  void buildNamesTheWrongOption() {
    assertThatThrownBy(() -> RabbitMqPublisher.builder().exchange("events").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("uri or connectionFactory is required: .uri(\"amqp://guest:guest@127.0.0.1:5672\") or"
            + " .connectionFactory(factory)");
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").connectionFactory(new ConnectionFactory())
        .exchange("events").build())
        .hasMessage("set either uri or connectionFactory, not both: the publisher would not know which one to use");
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").build())
        .hasMessage("exchange is required: .exchange(\"events\"), an exchange that exists");
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").exchange("a b").build())
        .hasMessage("exchange must be 1 to 255 letters, digits, '_', '.', ':' or '-', was 'a b'");
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").exchange("e").confirmWindow(0).build())
        .hasMessage("confirmWindow must be between 1 and 10000, was 0");
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://h").exchange("e")
        .confirmTimeout(Duration.ZERO).build())
        .hasMessage("confirmTimeout must be > 0, was PT0S");
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("http://u:pw@host:5672").exchange("e").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("uri 'http://***@host:5672' is not an AMQP URI: use e.g. amqp://guest:guest@127.0.0.1:5672"
            + " or amqps://user:password@host:5671/vhost");
    // java.net.URI reads an authority with a bad port as having no host, and the client then falls back to
    // localhost:5672 as guest: a typo must not quietly publish to another broker
    assertThatThrownBy(() -> RabbitMqPublisher.builder().uri("amqp://u:pw@rabbit.example:56x2").exchange("e").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("uri 'amqp://***@rabbit.example:56x2' is not an AMQP URI: use e.g."
            + " amqp://guest:guest@127.0.0.1:5672 or amqps://user:password@host:5671/vhost");
  }
}
