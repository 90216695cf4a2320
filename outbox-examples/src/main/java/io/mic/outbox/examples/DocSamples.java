package io.mic.outbox.examples;

import static java.util.concurrent.TimeUnit.MINUTES;
import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DeliveryHandler;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHealth;
import io.mic.outbox.OutboxListeners;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.SchemaVersions;
import io.mic.outbox.jdbc.DeadLetterQuery;
import io.mic.outbox.jdbc.InboxEffect;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxDeadLetters;
import io.mic.outbox.jdbc.OutboxMaintenance;
import io.mic.outbox.archive.ClickHouseArchive;
import io.mic.outbox.archive.JsonLinesArchive;
import io.mic.outbox.jdbc.archive.OutboxArchiver;
import io.mic.outbox.kafka.KafkaConsumers;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.micrometer.MicrometerOutboxMetrics;
import io.mic.outbox.opentelemetry.OutboxTracing;
import io.mic.outbox.test.FaultyPublisher;
import io.mic.outbox.test.OutboxTestDatabase;
import io.mic.outbox.test.OutboxTesting;
import io.mic.outbox.test.RecordingDispatchFn;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.context.Scope;
import io.mic.outbox.nats.NatsConsumers;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqConsumers;
import io.mic.replay.EventReplay;
import io.mic.replay.JsonArchiveSource;
import io.mic.replay.PublisherSink;
import io.mic.replay.ReplayResult;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Delivery;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.apache.kafka.clients.consumer.Consumer;

/**
 * Every Java sample of docs/, compiled against the real API. {@code DocSamplesTest} checks that each
 * sample in the documentation is the text between a pair of markers here, so the two cannot drift. The
 * method parameters stand for what the surrounding prose assumes the reader has.
 */
@SuppressWarnings({"unused", "resource"})
final class DocSamples {

  private DocSamples() {}

  record Order(String id) {}

  static void createInvoice(Connection c, Order order) {}

  static void createInvoice(Connection c, byte[] json) {}

  static void jdbc1(DataSource hikari) {
    // docs/jdbc.md 1 begin
    JdbcOutboxStore store = JdbcOutboxStore.builder()
        .dataSource(hikari)            // required
        .table("app.outbox")           // optional, default "outbox"; [A-Za-z_][A-Za-z0-9_]*, optionally schema.table
        .build();                      // detects the dialect, or .dialect(...)
    store.createSchema();              // idempotent
    // docs/jdbc.md 1 end
  }

  static JdbcOutboxStore configuration1(DataSource dataSource) {
    // docs/configuration.md 1 begin
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).deleteOnDispatch(true).build();
    // docs/configuration.md 1 end
    return store;
  }

  static void operations1(DataSource ds, io.nats.client.Message natsMessage, Channel channel, Delivery delivery,
      Consumer<byte[], byte[]> consumer, Order order) throws IOException {
    // docs/operations.md 1 begin
    JdbcInbox inbox = JdbcInbox.builder().dataSource(ds).build();   // .table("outbox_inbox"), .purgeBatchSize(1000)
    inbox.createSchema();                                            // or copy io/mic/outbox/jdbc/schema/inbox-<db>.sql

    InboxEffect createInvoice = c -> createInvoice(c, order);     // void apply(Connection) throws Exception
    DeliveryHandler billing = eventId -> inbox.runOnce("billing", eventId, createInvoice);  // true: applied now

    // NATS JetStream: ack() once applied or a duplicate, nak() if the effect threw, term() without an event id
    DeliveryOutcome outcome = NatsConsumers.handle(natsMessage, billing);

    // RabbitMQ (manual acks): basicAck, basicNack with requeue if the effect threw, without it if no event id
    RabbitMqConsumers.handle(channel, delivery, billing);    // never throws the effect's failure

    // Kafka: one poll's records in partition order; commits the offsets of what was handled
    KafkaConsumers.handle(consumer, consumer.poll(Duration.ofMillis(500)),
        (record, eventId) -> inbox.runOnce("billing", eventId, createInvoice));
    // docs/operations.md 1 end
  }

  static void operations2(JdbcOutboxStore store, ScheduledExecutorService scheduler) {
    // docs/operations.md 2 begin
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).batchSize(1000).build();
    scheduler.scheduleWithFixedDelay(() -> maintenance.purgeDispatchedOlderThan(Duration.ofDays(7)), 1, 60, MINUTES);
    // docs/operations.md 2 end
  }

  static void operationsHorizon(JdbcOutboxStore store, MeterRegistry registry) {
    // docs/operations.md 3 begin
    MicrometerOutboxMetrics metrics = MicrometerOutboxMetrics.builder().registry(registry).store(store).build();
    // among its gauges: mic.outbox.oldest.transaction.age, in seconds, 0 when none is open
    Optional<Duration> age = store.oldestTransactionAge();   // the same, read once; empty when none is open
    // docs/operations.md 3 end
  }

  static void operations3(JdbcOutboxStore store, ScheduledExecutorService scheduler) {
    // docs/operations.md 4 begin
    OutboxArchiver archiver = OutboxArchiver.builder().store(store).batchSize(1000)
        .sink(JsonLinesArchive.builder().directory(Path.of("/var/lib/outbox-archive")).maxEventsPerFile(100_000).build())
        .sink(ClickHouseArchive.builder().url("http://clickhouse:8123").table("outbox_archive")
            .credentials(System.getenv("CLICKHOUSE_USER"), System.getenv("CLICKHOUSE_PASSWORD")).build())
        .build();
    scheduler.scheduleWithFixedDelay(() -> archiver.archiveAndPurge(Duration.ofDays(7)), 1, 60, TimeUnit.MINUTES);
    // docs/operations.md 4 end
  }

  static void operations4(JdbcOutboxStore store, UUID id) {
    // docs/operations.md 5 begin
    OutboxDeadLetters dlq = OutboxDeadLetters.builder().store(store).build();
    DeadLetterQuery q = DeadLetterQuery.builder().topic("invoice.issued").errorContains("401").build();
    dlq.listDeadLetters(q);                                   // oldest first, default limit 100
    dlq.redrive(DeadLetterQuery.builder().topic("invoice.issued").errorContains("401").limit(10).build()); // canary
    dlq.redrive(q);   dlq.redriveAll();   dlq.redrive(id);   dlq.purgeDeadLetters(q);
    // docs/operations.md 5 end
  }

  static void operations5(MeterRegistry meterRegistry, JdbcOutboxStore store, DispatchFn publish) {
    // docs/operations.md 6 begin
    MicrometerOutboxMetrics metrics = MicrometerOutboxMetrics.builder()
        .registry(meterRegistry)                 // required
        .store(store)                            // optional: without it, no gauges (counters and timers only)
        .gaugeRefresh(Duration.ofSeconds(10))    // optional, default 10 s
        .build();
    OutboxHealth health = OutboxHealth.builder().store(store).build();

    AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder()
        .store(store).dispatchFn(publish)
        .listener(OutboxListeners.of(metrics.listener(), health))
        .build();
    dispatcher.start();
    // … the application runs …
    dispatcher.close();
    metrics.close();   // removes the gauges, so a late scrape does not query a closed DataSource
    // docs/operations.md 6 end
  }

  static void operations6(HttpServer server, OutboxHealth health) {
    // docs/operations.md 7 begin
    server.createContext("/health/outbox", exchange -> {
      int status;
      String body;
      try {
        OutboxHealth.Snapshot s = health.snapshot();
        status = s.isHealthy(Duration.ofMinutes(15)) ? 200 : 503;
        body = "{\"lagSeconds\":" + s.lag().map(Duration::toSeconds).orElse(0L)
            + ",\"pending\":" + s.pending() + ",\"dlq\":" + s.dlq() + "}";
      } catch (RuntimeException e) {
        status = 503;
        body = "{\"error\":\"outbox store unreadable\"}";
      }
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(status, bytes.length);
      exchange.getResponseBody().write(bytes);
      exchange.close();
    });
    // docs/operations.md 7 end
  }

  static void replay1(JdbcOutboxStore store) {
    // docs/nats.md 1 begin
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder()
        .url("nats://127.0.0.1:4222")         // or .connection(appConnection): then never closed by us
        .subjectPrefix("acme")                // optional: subject = acme.<topic>
        .ackTimeout(Duration.ofSeconds(5))    // default 5 s
        .maxPendingAcks(256)                  // default 256: outstanding PubAcks within one batch
        .connections(2)                       // default 2: batches published at once, each on its own
        .expectedStream("ORDERS")             // optional: Nats-Expected-Stream on every message
        .build()) {
      OutboxDispatcher.builder().store(store).dispatchFn(publisher).build().dispatchOnce();
    }
    // docs/nats.md 1 end
  }

  static void replay2() throws Exception {
    // docs/replay.md 1 begin
    try (NatsJetStreamPublisher nats = NatsJetStreamPublisher.builder()   // any publisher and its options
        .url("nats://127.0.0.1:4222").expectedStream("ORDERS").build()) {
      ReplayResult r = EventReplay.builder()
          .source(JsonArchiveSource.of(Path.of("archive.jsonl.gz")))   // or ClickHouseArchiveSource.builder()…
          .topic("order.created")
          .from(Instant.parse("2026-09-29T08:00:00Z")).to(Instant.parse("2026-09-29T10:00:00Z"))
          .sink(PublisherSink.of(nats))                                // or new DryRunSink(writer)
          .batchId("rebuild-1")
          .build().run();
    }
    // docs/replay.md 1 end
  }

  static void kafka1(JdbcOutboxStore store) {
    // docs/kafka.md 1 begin
    try (KafkaPublisher publisher = KafkaPublisher.builder()
        .bootstrapServers("127.0.0.1:9092")       // or .producer(appProducer): then never closed by us
        .property("linger.ms", "5")               // any producer setting (security, compression, ...)
        .topicOf(e -> "acme." + e.topic())        // optional; default: the event's topic
        .keyOf(OutboxEvent::aggregateId)          // optional; default: the aggregate id
        .deliveryTimeout(Duration.ofSeconds(20))  // default 20 s; keep it well below leaseTtl
        .build()) {
      OutboxDispatcher.builder().store(store).dispatchFn(publisher).build().dispatchOnce();
    }
    // docs/kafka.md 1 end
  }

  static void kafka2(Consumer<byte[], byte[]> consumer, JdbcInbox inbox, AtomicBoolean running) {
    // docs/kafka.md 2 begin
    while (running.get()) {    // enable.auto.commit=false: the helper commits what was handled
      KafkaConsumers.handle(consumer, consumer.poll(Duration.ofMillis(500)), (record, eventId) ->
          inbox.runOnce("billing", eventId, c -> createInvoice(c, record.value())));
    }
    // docs/kafka.md 2 end
  }

  static DeliveryOutcome consumers4(io.nats.client.Message msg, JdbcInbox inbox) {
    // docs/consumers.md 4 begin
    SchemaVersions accepts = SchemaVersions.upTo(1)   // every topic: version 1 (a message without the header is 1)
        .topic("order.created", 2);                   // order.created: versions 1 and 2
    DeliveryOutcome outcome = NatsConsumers.handle(msg, accepts,
        eventId -> inbox.runOnce("billing", eventId, c -> createInvoice(c, msg.getData())));
    // version 3 of order.created: REDELIVERED, the handler is not called, a WARN says what to deploy
    // docs/consumers.md 4 end
    return outcome;
  }

  static void handle(io.nats.client.Message msg) {}

  static UUID placeOrder(DataSource ds, JdbcOutboxStore store, String orderId) {
    return UUID.randomUUID();
  }

  static void opentelemetry1(OpenTelemetry openTelemetry, NatsJetStreamPublisher nats, JdbcOutboxStore store,
      Connection connection, OutboxEvent event, io.nats.client.Message msg) {
    // docs/opentelemetry.md 1 begin
    OutboxTracing tracing = OutboxTracing.builder(openTelemetry)  // GlobalOpenTelemetry.get(), or your SDK
        .messagingSystem("nats")                                   // messaging.system of every span
        .destination(nats::subjectOf)                              // messaging.destination.name; default: the topic
        .build();

    store.append(connection, OutboxTracing.withCurrentTrace(event));  // 1. in the request: capture its span

    AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder()
        .store(store).dispatchFn(tracing.wrap(nats))               // 2. a PRODUCER span per event, still batched
        .useClaim(true).build();

    Span span = tracing.startProcessSpan(msg.getSubject(), msg.getHeaders()::getFirst);  // 3. the consumer
    try (Scope scope = span.makeCurrent()) {
      handle(msg);
    } finally {
      span.end();
    }
    // docs/opentelemetry.md 1 end
  }

  static void testing1() {
    // docs/testing.md 1 begin
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    store.append(OutboxEvent.builder().aggregate("order", "42").topic("order.created").payload("{}").build());

    RecordingDispatchFn published = new RecordingDispatchFn();
    OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(published).build();
    OutboxTesting.dispatchUntilEmpty(dispatcher);          // on the test's thread, until nothing is due

    assertThat(published.topics()).containsExactly("order.created");
    // docs/testing.md 1 end
  }

  // docs/testing.md 2 begin
  void publishedOnceThoughThePublisherFailsTwice() throws InterruptedException {  // a @Test; the awaits wait
    OutboxTestDatabase db = OutboxTestDatabase.postgres();  // MIC_TEST_POSTGRES_URL, else Docker, else local
    JdbcOutboxStore store = db.newStore();                  // a fresh outbox table for this test
    RecordingDispatchFn published = new RecordingDispatchFn();
    FaultyPublisher flaky = FaultyPublisher.failingTimes(2, published);  // every event fails twice first

    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder()
        .store(store).dispatchFn(flaky)
        .retryBackoff(Duration.ofMillis(10), Duration.ofMillis(100))    // the configuration under test
        .build()) {
      dispatcher.start();
      UUID id = placeOrder(db.dataSource(), store, "42");   // your code, in its own transaction
      OutboxTesting.awaitDispatched(store, Duration.ofSeconds(10), id);  // fails at once if it hits the DLQ
      assertThat(flaky.calls(id)).isEqualTo(3);
      assertThat(published.timesPublished(id)).isEqualTo(1);
    } finally {
      db.dropStore(store);
    }
  }
  // docs/testing.md 2 end
}
