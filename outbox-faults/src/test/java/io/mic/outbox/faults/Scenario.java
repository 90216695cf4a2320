package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.MessageInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.Callable;
import org.awaitility.Awaitility;
import org.awaitility.core.ConditionTimeoutException;

/**
 * One run of the fault suite: a fresh outbox table (and stream), producers in this JVM, worker processes,
 * then the checker's figures, asserted against their bounds and appended to the results file.
 */
final class Scenario implements AutoCloseable {
  static final Path RESULTS = Path.of(System.getProperty("faults.results", "target/faults/results.md"));

  final String fault;
  final boolean ordered;
  /**
   * Where the workers publish: {@code recording}, {@code nats}, {@code rabbitmq} or {@code kafka}, or a cluster:
   * {@code nats-cluster} (a stream with three replicas on {@link Servers#natsCluster()}), {@code kafka-cluster}
   * (replication factor 3 on {@link Servers#kafkaCluster()}), {@code rabbitmq-cluster} (a quorum queue on
   * {@link Servers#rabbitCluster()}, declared through node 1 so its leader starts there; the workers get all
   * three nodes as {@code addresses} and connect to node 0, the first; the checker uses node 0).
   */
  final String sink;
  final boolean nats;
  final long seed;
  /** Whether the workers claim ahead and mark in the background (the dispatcher's default). */
  boolean pipelined = true;
  /** Whether the workers claim; without claims only one worker process may run at a time. */
  boolean claim = true;
  /** Whether the workers' store holds its claims in transactions ({@code transactionalClaims(true)}). */
  boolean transactionalClaims;
  /** Whether the workers hold an aggregate behind its dead event ({@code holdAggregateOnDeadLetter}). */
  boolean hold;
  /** Whether the poison events were redriven after their consumer was fixed, so none is left in the DLQ. */
  boolean poisonCured;
  /** Whether the workers' store deletes the rows it marks dispatched. */
  boolean deleteOnDispatch;
  int repetitions = 1;
  int batch = 10;
  int workersPerProcess = 1;
  /** The workers' lease and poll interval; 0: the dispatcher's default. */
  long leaseMs = 2000;
  long pollMs = 100;
  long delayMs = 2;
  int maxAttempts = 10;
  long retryMs = 200;
  int producerThreads = 2;
  int aggregatesPerThread = 10;
  int aggregatesPerTransaction = 3;
  long producerPauseMs = 40;
  int poison;
  /**
   * Duplicates the faults may cause: the events that the workers they cut off had published and not yet
   * marked ({@link #inFlight()} per worker process and fault); the scenario adds to it.
   */
  long duplicateBound;
  /**
   * Whether every event a worker put back as unavailable adds to the bound ({@link #releasedUnavailable()}):
   * on a broker that keeps every copy, through a failover.
   */
  boolean unavailableMayRepeat;
  /** Ports the workers connect to: the servers', or a proxy's in front of them. */
  int dbPort;
  int natsPort;
  int rabbitPort;
  /** RabbitMQ: what was drained from the queue so far (draining consumes). */
  private final List<Delivery> drained = new ArrayList<>();

  final Path dir;
  final Path deliveries;
  final Path outage;
  final String table;
  final String stream;
  final PrivatePostgres postgres;
  final HikariDataSource dataSource;
  final JdbcOutboxStore store;
  private final List<WorkerProcess> workers = new ArrayList<>();
  /** When the scenario's servers were ready: its duration leaves out starting them. */
  private final long startNanos;
  Producer producer;
  /** How long publication stood still, when the scenario measures it ({@link #watchStall}). */
  Stall stall;
  /** Events committed outside the producers (e.g. a transaction the scenario held open). */
  final List<Produced> extraCommitted = new ArrayList<>();

  private Scenario(String fault, String mode, String sink, long seed) throws Exception {
    this.fault = fault;
    this.ordered = "ordered".equals(mode);
    this.sink = sink;
    this.nats = sink.startsWith("nats");
    this.seed = seed;
    String id = UUID.randomUUID().toString().substring(0, 8);
    this.table = "f_" + id;
    this.stream = "F" + id;
    this.dir = RESULTS.getParent().resolve("logs").resolve(fault.replaceAll("[^A-Za-z0-9-]+", "-") + "-" + mode + "-"
        + sink + "-" + id);
    Files.createDirectories(dir);
    this.deliveries = dir.resolve("deliveries.log");
    this.outage = dir.resolve("outage");
    this.postgres = Servers.postgres();
    this.dbPort = postgres.port();
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(postgres.appUrl("faults-producer"));
    config.setMaximumPoolSize(producerThreads + 4);
    config.setConnectionTimeout(5_000);
    this.dataSource = new HikariDataSource(config);
    this.store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    if ("nats-cluster".equals(sink)) {
      Servers.natsCluster().createStream(stream);
    } else if (nats) {
      this.natsPort = Servers.nats().port();
      Servers.nats().createStream(stream, Duration.ofMinutes(2));
    } else if ("rabbitmq".equals(sink)) {
      this.rabbitPort = Servers.rabbit().port();
      Servers.rabbit().declare(stream);
    } else if ("rabbitmq-cluster".equals(sink)) {
      this.rabbitPort = Servers.rabbitCluster().node(0).port();
      Servers.rabbitCluster().node(1).declare(stream);
    } else if ("kafka".equals(sink)) {
      Servers.createKafkaTopic(stream, KAFKA_PARTITIONS);
    } else if ("kafka-cluster".equals(sink)) {
      Servers.kafkaCluster().createTopic(stream, KAFKA_PARTITIONS);
    }
    this.startNanos = System.nanoTime();
  }

  static final int KAFKA_PARTITIONS = 3;

  /**
   * The events one worker process may have published and not yet marked, which is what a fault that cuts it
   * off may repeat: per dispatcher thread the batch it publishes and, pipelined, the batch before it whose
   * mark runs in the background; in throughput mode through NATS, whose channel sends a batch before the last
   * one's PubAcks are in, one batch more.
   */
  long inFlight() {
    long batches = !pipelined ? 1 : nats && !ordered ? 3 : 2;
    return batches * batch * workersPerProcess;
  }

  private String sinkArgument() throws Exception {
    return switch (sink) {
      case "nats" -> "nats:" + Servers.nats().url(natsPort);
      case "nats-cluster" -> "nats:" + Servers.natsCluster().url();
      case "rabbitmq" -> "rabbitmq:" + Servers.rabbit().uri(rabbitPort);
      case "rabbitmq-cluster" -> "rabbitmq:" + Servers.rabbitCluster().node(0).uri(rabbitPort);
      case "kafka" -> "kafka:" + Servers.kafka().bootstrap();
      case "kafka-cluster" -> "kafka:" + Servers.kafkaCluster().bootstrap();
      default -> "record:" + deliveries;
    };
  }

  /** The workers' lease. */
  Duration lease() {
    return leaseMs > 0 ? Duration.ofMillis(leaseMs) : OutboxDispatcher.DEFAULT_LEASE_TTL;
  }

  static Scenario of(String fault, String mode, String sink, long seed) throws Exception {
    return new Scenario(fault, mode, sink, seed);
  }

  String mode() {
    return ordered ? "ordered" : "throughput";
  }

  /** The mode as the results show it: pipelining off, no claims, deleting marks and more workers are stated. */
  private String modeLabel() {
    return mode() + (pipelined ? "" : ", not pipelined") + (claim ? "" : ", without claims")
        + (transactionalClaims ? ", claims held by transactions" : "")
        + (deleteOnDispatch ? ", deleting on dispatch" : "") + (hold ? ", holding aggregates" : "")
        + (workersPerProcess == 1 ? "" : ", " + workersPerProcess + " workers per process");
  }

  /** Starts a worker process; {@code extra} are {@code key=value} overrides such as {@code fault=after-claim}. */
  WorkerProcess worker(String name, String... extra) throws Exception {
    if (transactionalClaims) { // their claim journal, once, before the workers race to create it
      JdbcOutboxStore.builder().dataSource(dataSource).table(table).transactionalClaims(true).build().createSchema();
    }
    List<String> args = new ArrayList<>(List.of(
        "jdbc=" + postgres.appUrl(dbPort, "faults-worker"), "table=" + table, "mode=" + mode(),
        "sink=" + sinkArgument(), "pipelined=" + pipelined, "claim=" + claim, "deleteOnDispatch=" + deleteOnDispatch,
        "transactionalClaims=" + transactionalClaims, "hold=" + hold,
        "stream=" + stream, "outage=" + outage, "workers=" + workersPerProcess, "batch=" + batch,
        "delayMs=" + delayMs, "maxAttempts=" + maxAttempts, "retryMs=" + retryMs));
    if ("rabbitmq-cluster".equals(sink)) {
      args.add("rabbitAddresses=" + Servers.rabbitCluster().addresses());
    }
    if (leaseMs > 0) {
      args.add("leaseMs=" + leaseMs);
    }
    if (pollMs > 0) {
      args.add("pollMs=" + pollMs);
    }
    args.addAll(List.of(extra));
    WorkerProcess w = WorkerProcess.start(name, dir, args);
    workers.add(w);
    w.awaitReady();
    return w;
  }

  /**
   * The events the workers put back as unavailable so far: each publication whose send failed without an
   * answer may still have reached a broker that does not de-duplicate, and is published again.
   */
  long releasedUnavailable() {
    return workers.stream().mapToLong(w -> w.count("UNAVAILABLE ")).sum();
  }

  Producer produce() {
    producer = new Producer(dataSource, store, seed, producerThreads, aggregatesPerThread, aggregatesPerTransaction,
        producerPauseMs, poison).start();
    return producer;
  }

  /** Waits until the producers committed at least {@code n} more events (load keeps running meanwhile). */
  void awaitProduced(int more) {
    int target = producer.committed().size() + more;
    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> producer.committed().size() >= target);
  }

  /** Starts measuring how long publication stands still; {@code delivered} counts the events the broker holds. */
  Stall watchStall(Callable<Long> delivered) {
    stall = Stall.watch(delivered);
    return stall;
  }

  /** Waits until the broker received at least {@code n} events. */
  void awaitDelivered(int n) {
    Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> readDeliveries().size() >= n);
  }

  List<Delivery> readDeliveries() throws Exception {
    if (sink.startsWith("rabbitmq")) {
      drained.addAll(rabbit().drain(stream));
      return List.copyOf(drained);
    }
    if ("kafka".equals(sink)) {
      return Servers.readKafkaTopic(stream);
    }
    if ("kafka-cluster".equals(sink)) {
      return Servers.readKafkaTopic(Servers.kafkaCluster().bootstrap(), stream);
    }
    if (!nats) {
      return Delivery.readLog(deliveries);
    }
    List<Delivery> all = new ArrayList<>();
    try (Connection c = "nats-cluster".equals(sink) ? Servers.natsCluster().connect() : Servers.nats().connect()) {
      JetStreamManagement jsm = c.jetStreamManagement();
      long last = jsm.getStreamInfo(stream).getStreamState().getLastSequence();
      for (long seq = 1; seq <= last; seq++) {
        MessageInfo m = jsm.getMessage(stream, seq);
        all.add(new Delivery(UUID.fromString(m.getHeaders().getFirst("x-event-id")),
            m.getHeaders().getFirst("x-aggregate-id"),
            Workload.sequenceOf(new String(m.getData(), StandardCharsets.UTF_8)), 0));
      }
    }
    return all;
  }

  /** The RabbitMQ node the workers publish to and the checker drains. */
  private PrivateRabbit rabbit() throws Exception {
    return "rabbitmq-cluster".equals(sink) ? Servers.rabbitCluster().node(0) : Servers.rabbit();
  }

  Checker.TableState tableState() throws SQLException {
    try (java.sql.Connection c = dataSource.getConnection()) {
      return Checker.TableState.read(c, table);
    }
  }

  /**
   * Stops the producers, waits until no row is left {@code PENDING} or {@code PROCESSING} (lease + poll
   * plus the time to drain the backlog), computes the figures, records them and asserts their bounds.
   */
  Figures finish() throws Exception {
    if (stall != null) {
      stall.close();
    }
    if (producer != null) {
      producer.close();
    }
    Duration drain = lease().plus(Duration.ofMillis(pollMs > 0 ? pollMs : 1000)).plusSeconds(60);
    try {
      Awaitility.await().atMost(drain).pollInterval(Duration.ofMillis(250)).until(() -> tableState().stuck() == 0);
    } catch (ConditionTimeoutException e) {
      // the figures below show what is stuck
    }
    if (unavailableMayRepeat) {
      duplicateBound += releasedUnavailable();
    }
    List<Produced> committed = new ArrayList<>(extraCommitted);
    if (producer != null) {
      committed.addAll(producer.committed());
    }
    Checker.TableState state = tableState();
    Figures f = Checker.check(committed, readDeliveries(), state, ordered);
    Results.append(RESULTS, fault, modeLabel(), ordered, sink, repetitions, seed, f, duplicateBound,
        stall == null ? "n/a" : stall.describe(), Duration.ofNanos(System.nanoTime() - startNanos));
    assertThat(f.lost()).as("lost events: %s", f).isZero();
    if (ordered) {
      assertThat(f.orderViolations()).as("order violations: %s", f).isZero();
    }
    assertThat((long) f.duplicates()).as("duplicates (bound %d): %s", duplicateBound, f).isLessThanOrEqualTo(duplicateBound);
    assertThat(f.stuck()).as("stuck rows after lease + poll: %s", f).isZero();
    assertThat(state.dlq()).as("the DLQ holds exactly the poison events: %s", f)
        .containsExactlyInAnyOrderElementsOf(producer == null || poisonCured ? List.of() : producer.poisonIds());
    assertNoSecretInLogs();
    return f;
  }

  /** No test password in any line a worker printed. */
  void assertNoSecretInLogs() throws IOException {
    for (WorkerProcess w : workers) {
      for (Path log : w.logs()) {
        if (Files.exists(log)) {
          String text = Files.readString(log);
          for (String secret : List.of(Servers.PG_ADMIN_PASSWORD, Servers.PG_APP_PASSWORD, Servers.NATS_PASSWORD,
              Servers.RABBIT_PASSWORD)) {
            assertThat(text).as("a secret in %s", log).doesNotContain(secret);
          }
        }
      }
    }
  }

  void execute(String sql) throws SQLException {
    try (java.sql.Connection c = postgres.admin(); Statement s = c.createStatement()) {
      s.execute(sql);
    }
  }

  @Override
  public void close() throws Exception {
    for (WorkerProcess w : workers) {
      if (w.isAlive()) {
        try {
          w.resume(); // a paused worker cannot stop
        } catch (RuntimeException e) {
          // already gone
        }
      }
      w.close();
    }
    if (stall != null) {
      stall.close();
    }
    if (producer != null) {
      producer.close();
    }
    dataSource.close();
    try (java.sql.Connection c = postgres.admin(); Statement s = c.createStatement()) {
      s.execute("DROP TABLE IF EXISTS " + table.toLowerCase(Locale.ROOT));
      s.execute("DROP TABLE IF EXISTS " + table.toLowerCase(Locale.ROOT) + "_claims");
    } catch (SQLException e) {
      // the server may be down after a failed restart scenario; the directory goes at exit
    }
    try {
      if (sink.startsWith("rabbitmq")) {
        rabbit().delete(stream);
      } else if ("kafka".equals(sink)) {
        Servers.deleteKafkaTopic(stream);
      } else if ("kafka-cluster".equals(sink)) {
        Servers.kafkaCluster().deleteTopic(stream);
      }
    } catch (Exception e) {
      // the broker may be down after a failed outage scenario; the private servers go at exit
    }
  }
}
