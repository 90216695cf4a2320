package io.mic.outbox.faults;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.ReleaseReason;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import java.io.InputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import javax.sql.DataSource;

/**
 * A dispatcher process for the fault suite: an {@link AsyncOutboxDispatcher} on the JDBC store, publishing
 * to the {@link RecordingSink}, NATS JetStream, RabbitMQ or Kafka, with at most one armed
 * {@link FaultPoint}. It prints {@code READY} once started, {@code LEASE-LOST <id>}, {@code DLQ <id>} and
 * {@code UNAVAILABLE <id>} (put back untried: the broker could not be reached) as they happen, and runs until it is killed or its standard input closes.
 *
 * <p>Arguments, {@code key=value}: {@code jdbc} (URL with credentials), {@code table}, {@code mode}
 * ({@code ordered} | {@code throughput}), {@code sink} ({@code record:<file>} | {@code nats:<url>} |
 * {@code rabbitmq:<uri>} | {@code kafka:<bootstrap servers>}), {@code rabbitAddresses} (RabbitMQ: the cluster's
 * nodes, {@code host:port,…}, in place of the uri's host), {@code stream} (subject prefix on NATS,
 * exchange on RabbitMQ, topic on Kafka), {@code outage} (file), {@code workers}, {@code batch},
 * {@code leaseMs}, {@code pollMs} (either left out: the dispatcher's default), {@code delayMs},
 * {@code maxAttempts}, {@code retryMs}, {@code hold},
 * {@code pipelined} ({@code true}, the dispatcher's default, or {@code false}), {@code claim} ({@code true},
 * or {@code false}: the store's default mode, one process at a time), {@code deleteOnDispatch} ({@code false}
 * or {@code true}), {@code transactionalClaims} ({@code false} or {@code true}: claims held by transactions,
 * PostgreSQL), {@code fault} (a {@link FaultPoint} label), {@code faultAt} (which occurrence parks).
 */
public final class WorkerMain {
  private WorkerMain() {}

  public static void main(String[] args) throws Exception {
    Map<String, String> a = new HashMap<>();
    for (String arg : args) {
      int eq = arg.indexOf('=');
      a.put(arg.substring(0, eq), arg.substring(eq + 1));
    }
    FaultPoint fault = FaultPoint.parse(a.getOrDefault("fault", "none"));
    fault.arm(Integer.parseInt(a.getOrDefault("faultAt", "1")));
    int workers = Integer.parseInt(a.getOrDefault("workers", "1"));
    boolean transactionalClaims = Boolean.parseBoolean(a.getOrDefault("transactionalClaims", "false"));

    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(a.get("jdbc"));
    // a claim held by a transaction keeps its connection: up to two per pipelined worker
    config.setMaximumPoolSize(transactionalClaims ? 2 * workers + 2 : workers + 2);
    config.setConnectionTimeout(5_000);
    config.setPoolName("faults-worker");
    // a mark is committed by the store itself only on a pool without auto-commit: the window DURING_MARK needs
    config.setAutoCommit(fault != FaultPoint.DURING_MARK);
    try (HikariDataSource pool = new HikariDataSource(config)) {
      DataSource ds = fault == FaultPoint.DURING_MARK ? new MarkCommitFence(pool) : pool;
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(a.get("table"))
          .deleteOnDispatch(Boolean.parseBoolean(a.getOrDefault("deleteOnDispatch", "false")))
          .transactionalClaims(transactionalClaims).build();
      String sink = a.get("sink");
      AutoCloseable closeSink;
      DispatchFn publish;
      if (sink.startsWith("record:")) {
        String outage = a.get("outage");
        RecordingSink recording = new RecordingSink(Path.of(sink.substring("record:".length())),
            outage == null ? null : Path.of(outage), Long.parseLong(a.getOrDefault("delayMs", "0")));
        publish = recording;
        closeSink = recording;
      } else if (sink.startsWith("nats:")) {
        NatsJetStreamPublisher nats = NatsJetStreamPublisher.builder().url(sink.substring("nats:".length()))
            .subjectPrefix(a.get("stream")).ackTimeout(Duration.ofSeconds(2)).build();
        publish = new ParkingPublisher().wrap(nats);
        closeSink = nats;
      } else if (sink.startsWith("rabbitmq:")) {
        RabbitMqPublisher rabbit = RabbitMqPublisher.builder().uri(sink.substring("rabbitmq:".length()))
            .addresses(a.get("rabbitAddresses")).exchange(a.get("stream")).confirmTimeout(Duration.ofSeconds(2)).connectTimeout(Duration.ofSeconds(2))
            .build();
        publish = new ParkingPublisher().wrap(rabbit);
        closeSink = rabbit;
      } else if (sink.startsWith("kafka:")) {
        String topic = a.get("stream");
        // a send fails as unavailable within 3 s, well inside the lease the keeper renews meanwhile
        KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(sink.substring("kafka:".length()))
            .topicOf(e -> topic).deliveryTimeout(Duration.ofSeconds(3)).requestTimeout(Duration.ofSeconds(1))
            .maxBlock(Duration.ofSeconds(1)).build();
        publish = new ParkingPublisher().wrap(kafka);
        closeSink = kafka;
      } else {
        throw new IllegalArgumentException("sink must be record:<file>, nats:<url>, rabbitmq:<uri> or"
            + " kafka:<bootstrap servers>");
      }
      long retryMs = Long.parseLong(a.getOrDefault("retryMs", "200"));
      AsyncOutboxDispatcher.Builder builder = AsyncOutboxDispatcher.builder();
      if (a.containsKey("leaseMs")) {
        builder.leaseTtl(Duration.ofMillis(Long.parseLong(a.get("leaseMs"))));
      }
      if (a.containsKey("pollMs")) {
        builder.pollInterval(Duration.ofMillis(Long.parseLong(a.get("pollMs"))));
      }
      AsyncOutboxDispatcher dispatcher = builder
          .store(new FaultStore(store)).dispatchFn(publish)
          .useClaim(Boolean.parseBoolean(a.getOrDefault("claim", "true")))
          .preserveAggregateOrder("ordered".equals(a.get("mode")))
          .holdAggregateOnDeadLetter(Boolean.parseBoolean(a.getOrDefault("hold", "false")))
          .workers(workers).batchSize(Integer.parseInt(a.getOrDefault("batch", "10")))
          .maxAttempts(Integer.parseInt(a.getOrDefault("maxAttempts", "10")))
          .retryBackoff(Duration.ofMillis(retryMs), Duration.ofMillis(retryMs * 2))
          .shutdownTimeout(Duration.ofSeconds(5))
          .pipelined(Boolean.parseBoolean(a.getOrDefault("pipelined", "true")))
          .listener(new Reporter())
          .name("faults-" + ProcessHandle.current().pid())
          .build();
      dispatcher.start();
      System.out.println("READY " + ProcessHandle.current().pid());
      System.out.flush();
      InputStream in = System.in;
      while (in.read() >= 0) {
        // the test closes our stdin to stop us gracefully
      }
      dispatcher.close();
      closeSink.close();
    }
  }

  /** What the test needs to see of the dispatcher's decisions, one line each on stdout. */
  private static final class Reporter implements OutboxListener {
    @Override
    public void onLeaseLost(OutboxEvent event) {
      line("LEASE-LOST " + event.id());
    }

    @Override
    public void onReleased(OutboxEvent event, ReleaseReason reason) {
      if (reason == ReleaseReason.BROKER_UNAVAILABLE) {
        line("UNAVAILABLE " + event.id());
      }
    }

    @Override
    public void onDeadLettered(OutboxEvent event, String error) {
      line("DLQ " + event.id());
    }

    private static synchronized void line(String text) {
      System.out.println(text);
      System.out.flush();
    }
  }
}
