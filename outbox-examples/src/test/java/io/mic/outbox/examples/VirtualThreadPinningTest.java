package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.BuiltinExchangeType;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.kafka.KafkaTestBroker;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import io.mic.outbox.rabbitmq.TestRabbit;
import io.mic.outbox.test.OutboxTestDatabase;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StreamConfiguration;
import java.nio.file.Path;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With virtual threads as the dispatcher's executor (JDK 24 and later, where {@code synchronized} no longer
 * pins), a drain of 2,000 events through PostgreSQL to each broker records no {@code jdk.VirtualThreadPinned}
 * event once the dispatcher has warmed up: the claim, the publication and the mark never hold a carrier thread
 * while they wait. Runs when the suite runs
 * on such a JDK ({@code JAVA_HOME=<jdk 25> mvn -B verify}); the library itself stays Java 17 bytecode.
 */
class VirtualThreadPinningTest {
  private static final int EVENTS = 2_000;

  @TempDir Path dir;

  @Test
  void natsDrainPinsNoCarrier() throws Exception {
    assumeVirtualThreadsWithoutSynchronizedPinning();
    String name = "vt" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
    String url = System.getenv().getOrDefault("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");
    try (Connection nats = Nats.connect(url)) {
      nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(name).subjects(name + ".>").build());
      try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(url).build()) {
        assertNoPinning(publisher, name + ".created");
      } finally {
        nats.jetStreamManagement().deleteStream(name);
      }
    }
  }

  @Test
  void rabbitMqDrainPinsNoCarrier() throws Exception {
    assumeVirtualThreadsWithoutSynchronizedPinning();
    String name = TestRabbit.uniqueName();
    try (com.rabbitmq.client.Connection rabbit = TestRabbit.connect();
        com.rabbitmq.client.Channel channel = rabbit.createChannel()) {
      channel.exchangeDeclare(name, BuiltinExchangeType.TOPIC, false, true, null);
      channel.queueDeclare(name, false, false, true, null);
      channel.queueBind(name, name, "#");
      try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(name).build()) {
        assertNoPinning(publisher, "order.created");
      } finally {
        channel.queueDelete(name);
        channel.exchangeDelete(name);
      }
    }
  }

  @Test
  void kafkaDrainPinsNoCarrier() throws Exception {
    assumeVirtualThreadsWithoutSynchronizedPinning();
    String bootstrap = KafkaTestBroker.bootstrap();
    String topic = "vt-" + UUID.randomUUID().toString().substring(0, 13);
    try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
      admin.createTopics(List.of(new NewTopic(topic, 4, (short) 1))).all().get();
      try (KafkaPublisher publisher = KafkaPublisher.builder().bootstrapServers(bootstrap).build()) {
        assertNoPinning(publisher, topic);
      } finally {
        admin.deleteTopics(List.of(topic)).all().get();
      }
    }
  }

  private void assertNoPinning(DispatchFn publisher, String topic) throws Exception {
    OutboxTestDatabase db = OutboxTestDatabase.postgres();
    JdbcOutboxStore store = db.newStore();
    Path file = dir.resolve("pinned.jfr");
    ExecutorService virtual = (ExecutorService) Executors.class.getMethod("newVirtualThreadPerTaskExecutor")
        .invoke(null);
    try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher)
        .useClaim(true).preserveAggregateOrder(true).workers(4).executor(virtual)
        .pollInterval(Duration.ofMillis(50)).build()) {
      dispatcher.start();
      // the first drain of a JVM pins while classes load (a class loader's native frame cannot be unmounted)
      // and while the JDK initializes its socket poller: start-up, not the hot path measured below
      appendAndDrain(db, store, topic, 200);
      try (Recording recording = new Recording()) {
        recording.enable("jdk.VirtualThreadPinned").withThreshold(Duration.ZERO).withStackTrace();
        recording.start();
        appendAndDrain(db, store, topic, EVENTS);
        recording.stop();
        recording.dump(file);
      }
    } finally {
      virtual.shutdownNow();
      db.dropStore(store);
    }
    List<RecordedEvent> pinned = RecordingFile.readAllEvents(file).stream()
        .filter(e -> e.getEventType().getName().equals("jdk.VirtualThreadPinned")).collect(Collectors.toList());
    assertThat(pinned).as("pinned carriers, at:%n%s", pinned.stream().map(VirtualThreadPinningTest::where)
        .collect(Collectors.joining("\n"))).isEmpty();
  }

  private static void appendAndDrain(OutboxTestDatabase db, JdbcOutboxStore store, String topic, int count)
      throws Exception {
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      events.add(OutboxEvent.builder().aggregate("order", String.valueOf(i % 50)).topic(topic)
          .payload("{\"n\":" + i + "}").build());
    }
    try (java.sql.Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, events);
      c.commit();
    }
    await().atMost(Duration.ofSeconds(60)).until(() -> notDispatched(db, store) == 0);
  }

  private static long notDispatched(OutboxTestDatabase db, JdbcOutboxStore store) throws Exception {
    try (java.sql.Connection c = db.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + store.table() + " WHERE status <> 'DISPATCHED'")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private static String where(RecordedEvent e) {
    return e.getString("pinnedReason") + ": " + (e.getStackTrace() == null ? "(no stack)"
        : e.getStackTrace().getFrames().stream().limit(12).map(RecordedFrame::getMethod)
            .map(m -> m.getType().getName() + "." + m.getName()).collect(Collectors.joining(" <- ")));
  }

  private static void assumeVirtualThreadsWithoutSynchronizedPinning() {
    Assumptions.assumeTrue(Runtime.version().feature() >= 24,
        "virtual threads pin on synchronized before JDK 24: this check runs on JDK 24 and later");
  }
}
