package io.mic.outbox.faults;

import io.mic.outbox.kafka.BrokerMain;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.Uuid;
import org.awaitility.Awaitility;

/**
 * Three KRaft nodes of the suite's own, each broker and controller, in child JVMs with small heaps (the
 * machine is shared): node ids 1 to 3, loopback listeners, a data directory each, one cluster id. A topic
 * gets replication factor 3 and {@code min.insync.replicas=2}, so {@code acks=all} needs two copies; the suite
 * kills a partition leader, or two of the three nodes, and restarts them on their data.
 */
final class KafkaCluster implements AutoCloseable {
  static final int SIZE = 3;

  private final Path dir;
  private final int[] ports = new int[SIZE];
  private final Process[] processes = new Process[SIZE];
  private final Admin admin;

  private KafkaCluster(Path dir) throws IOException {
    this.dir = dir;
    int[] controllers = new int[SIZE];
    for (int i = 0; i < SIZE; i++) {
      ports[i] = Shell.freePort();
      controllers[i] = Shell.freePort();
    }
    String voters = IntStream.range(0, SIZE).mapToObj(i -> (i + 1) + "@127.0.0.1:" + controllers[i])
        .collect(Collectors.joining(","));
    String clusterId = Uuid.randomUuid().toString();
    for (int i = 0; i < SIZE; i++) {
      Path config = dir.resolve("node" + i + ".properties");
      Files.writeString(config, String.join("\n",
          "process.roles=broker,controller",
          "node.id=" + (i + 1),
          "controller.quorum.voters=" + voters,
          "listeners=PLAINTEXT://127.0.0.1:" + ports[i] + ",CONTROLLER://127.0.0.1:" + controllers[i],
          "advertised.listeners=PLAINTEXT://127.0.0.1:" + ports[i],
          "controller.listener.names=CONTROLLER",
          "inter.broker.listener.name=PLAINTEXT",
          "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
          "log.dirs=" + dir.resolve("data" + i),
          "auto.create.topics.enable=false",
          "default.replication.factor=" + SIZE,
          "min.insync.replicas=2",
          "offsets.topic.replication.factor=" + SIZE,
          "offsets.topic.num.partitions=1",
          "transaction.state.log.replication.factor=" + SIZE,
          "transaction.state.log.min.isr=2",
          "share.coordinator.state.topic.replication.factor=" + SIZE,
          "share.coordinator.state.topic.min.isr=2",
          "group.initial.rebalance.delay.ms=0",
          "num.network.threads=2",
          "num.io.threads=2",
          "background.threads=2",
          "num.replica.fetchers=1",
          ""), StandardCharsets.UTF_8);
      run("format" + i, List.of("kafka.tools.StorageTool", "format", "-t", clusterId, "-c", config.toString()));
    }
    this.admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(),
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000", AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000"));
  }

  static KafkaCluster start() throws IOException {
    KafkaCluster cluster = new KafkaCluster(Files.createTempDirectory("mic-faults-kafka-"));
    try {
      cluster.restart(0, 1, 2);
      return cluster;
    } catch (RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  /** The three brokers' addresses: the clients fail over between them. */
  String bootstrap() {
    return IntStream.of(ports).mapToObj(p -> "127.0.0.1:" + p).collect(Collectors.joining(","));
  }

  /** {@code partitions} partitions, replication factor 3, {@code min.insync.replicas=2}, all replicas in sync. */
  void createTopic(String topic, int partitions) throws Exception {
    admin.createTopics(List.of(new NewTopic(topic, partitions, (short) SIZE)
        .configs(Map.of("min.insync.replicas", "2")))).all().get(60, TimeUnit.SECONDS);
    awaitInSync(topic);
  }

  void deleteTopic(String topic) throws Exception {
    admin.deleteTopics(Set.of(topic)).all().get(60, TimeUnit.SECONDS);
  }

  /** The index (0 to 2) of the node leading {@code partition} of {@code topic}, once it is not {@code former}. */
  int leader(String topic, int partition, int former) {
    return Awaitility.await("a leader of " + topic + "-" + partition).atMost(Duration.ofSeconds(60))
        .pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .until(() -> {
          TopicPartitionInfo p = describe(topic).partitions().get(partition);
          return p.leader() == null || p.leader().isEmpty() ? -1 : p.leader().id() - 1;
        }, i -> i >= 0 && i != former);
  }

  /** Waits until every partition of {@code topic} has a leader and all three replicas in sync. */
  void awaitInSync(String topic) {
    awaitInSync(topic, SIZE);
  }

  /**
   * Waits until every partition of {@code topic} has a leader and at least {@code replicas} replicas in sync
   * (with 2, the minimum, it takes {@code acks=all} writes again).
   */
  void awaitInSync(String topic, int replicas) {
    Awaitility.await(replicas + " replicas of " + topic + " in sync").atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(200)).ignoreExceptions()
        .until(() -> describe(topic).partitions().stream()
            .allMatch(p -> p.leader() != null && !p.leader().isEmpty() && p.isr().size() >= replicas));
  }

  private TopicDescription describe(String topic) throws Exception {
    return admin.describeTopics(Set.of(topic)).allTopicNames().get(3, TimeUnit.SECONDS).get(topic);
  }

  /** The records {@code topic} holds: the sum of its partitions' end offsets. */
  long records(String topic) throws Exception {
    Map<TopicPartition, OffsetSpec> latest = describe(topic).partitions().stream()
        .collect(Collectors.toMap(p -> new TopicPartition(topic, p.partition()), p -> OffsetSpec.latest()));
    return admin.listOffsets(latest).all().get(3, TimeUnit.SECONDS).values().stream()
        .mapToLong(o -> o.offset()).sum();
  }

  /** SIGKILL of node {@code i}, as in a crash. */
  void kill(int i) throws InterruptedException {
    processes[i].destroyForcibly().waitFor(30, TimeUnit.SECONDS);
  }

  /**
   * Starts the given nodes on their data and waits until each is a registered broker again (a node alone has
   * no controller quorum: start the others with it).
   */
  void restart(int... which) throws IOException {
    for (int i : which) {
      processes[i] = javaProcess("node" + i, List.of(BrokerMain.class.getName(),
          dir.resolve("node" + i + ".properties").toString())).start();
    }
    Set<Integer> ids = IntStream.of(which).map(i -> i + 1).boxed().collect(Collectors.toSet());
    Awaitility.await("Kafka nodes " + ids + " to start (logs in " + dir + ")").atMost(Duration.ofSeconds(120))
        .pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> {
          for (int i : which) {
            if (!processes[i].isAlive()) {
              throw new IllegalStateException("Kafka node " + i + " exited, see " + dir.resolve("node" + i + ".log"));
            }
          }
          return admin.describeCluster().nodes().get(3, TimeUnit.SECONDS).stream()
              .map(n -> n.id()).collect(Collectors.toSet()).containsAll(ids);
        });
  }

  private void run(String name, List<String> mainAndArgs) throws IOException {
    try {
      Process p = javaProcess(name, mainAndArgs).start();
      p.getOutputStream().close();
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        p.destroyForcibly();
        throw new IllegalStateException(name + " of the Kafka cluster failed: "
            + Files.readString(dir.resolve(name + ".log")));
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted", e);
    }
  }

  /** A child JVM with a small heap: three brokers share two cores with everything else. */
  private ProcessBuilder javaProcess(String name, List<String> mainAndArgs) {
    String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xms64m", "-Xmx320m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:CICompilerCount=1",
        "-Xss512k", "-Xshare:auto", "-cp", classpath));
    command.addAll(mainAndArgs);
    return new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve(name + ".log").toFile()));
  }

  @Override
  public void close() {
    admin.close(Duration.ofSeconds(5));
    for (Process p : processes) {
      if (p != null) {
        p.destroyForcibly();
      }
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      System.err.println("could not delete " + dir + ": " + e.getMessage());
    }
  }
}
