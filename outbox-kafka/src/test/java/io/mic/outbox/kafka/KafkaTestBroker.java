package io.mic.outbox.kafka;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.kafka.KafkaContainer;

/**
 * The Kafka broker the tests use, found in this order: {@code MIC_TEST_KAFKA_BOOTSTRAP}; a Testcontainers
 * broker when Docker is available; else a real single-node KRaft broker ({@code kafka.Kafka} from the
 * {@code kafka_2.13} test dependency) started in a child JVM for this test run and stopped when it ends.
 * Tests that freeze or stop the broker always get a child JVM ({@link #child()}). Published in the
 * module's test-jar, so other modules' tests (the demo's) use the same broker.
 */
public final class KafkaTestBroker {
  static final String ENV = "MIC_TEST_KAFKA_BOOTSTRAP";

  private static String sharedBootstrap;
  private static ChildBroker sharedChild;

  private KafkaTestBroker() {}

  /** The bootstrap servers of the broker shared by the tests of this JVM. */
  public static synchronized String bootstrap() {
    if (sharedBootstrap == null) {
      String env = System.getenv(ENV);
      if (env != null && !env.isBlank()) {
        sharedBootstrap = env;
      } else if (dockerAvailable()) {
        KafkaContainer container = new KafkaContainer("apache/kafka:4.1.1");
        container.start();
        Runtime.getRuntime().addShutdownHook(new Thread(container::stop));
        sharedBootstrap = container.getBootstrapServers();
      } else {
        sharedChild = ChildBroker.start();
        sharedBootstrap = sharedChild.bootstrap();
      }
    }
    return sharedBootstrap;
  }

  /** A broker in a child JVM that the test may freeze and stop: the shared one if it is a child. */
  static synchronized ChildBroker child() {
    bootstrap();
    return sharedChild != null ? sharedChild : ChildBroker.start();
  }

  static String uniqueTopic() {
    return "mic-" + UUID.randomUUID().toString().substring(0, 13);
  }

  static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(30, TimeUnit.SECONDS);
    }
  }

  static void deleteTopic(String bootstrap, String topic) throws Exception {
    try (Admin admin = admin(bootstrap)) {
      admin.deleteTopics(Set.of(topic)).all().get(30, TimeUnit.SECONDS);
    }
  }

  static Admin admin(String bootstrap) {
    return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000", AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000"));
  }

  private static boolean dockerAvailable() {
    try {
      return DockerClientFactory.instance().isDockerAvailable();
    } catch (RuntimeException | LinkageError e) {
      return false;
    }
  }

  /**
   * A single-node KRaft broker (broker and controller) in a child JVM, with its storage in a temp dir; other
   * modules' tests that freeze, kill or restart a broker start their own with {@link #start()}.
   */
  public static final class ChildBroker implements AutoCloseable {
    /** The mechanism of the {@link #scramBootstrap()} listener. */
    public static final String SCRAM_MECHANISM = "SCRAM-SHA-256";

    private final Path dir;
    private final int port;
    private final int scramPort;
    private Process process;

    private ChildBroker(Path dir, int port, int scramPort) {
      this.dir = dir;
      this.port = port;
      this.scramPort = scramPort;
    }

    public static ChildBroker start() {
      try {
        Path dir = Files.createTempDirectory("mic-kafka-");
        int port = freePort();
        int scramPort = freePort();
        int controllerPort = freePort();
        Path config = dir.resolve("server.properties");
        Files.writeString(config, String.join("\n",
            "process.roles=broker,controller",
            "node.id=1",
            "controller.quorum.voters=1@127.0.0.1:" + controllerPort,
            "listeners=PLAINTEXT://127.0.0.1:" + port + ",SASL_PLAINTEXT://127.0.0.1:" + scramPort
                + ",CONTROLLER://127.0.0.1:" + controllerPort,
            "advertised.listeners=PLAINTEXT://127.0.0.1:" + port + ",SASL_PLAINTEXT://127.0.0.1:" + scramPort,
            "controller.listener.names=CONTROLLER",
            "inter.broker.listener.name=PLAINTEXT",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms=" + SCRAM_MECHANISM,
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config="
                + "org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "log.dirs=" + dir.resolve("data"),
            "num.partitions=1",
            "auto.create.topics.enable=false",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            ""), StandardCharsets.UTF_8);
        run(dir, "format", List.of("kafka.tools.StorageTool", "format", "-t", Uuid.randomUuid().toString(),
            "-c", config.toString()));
        ChildBroker broker = new ChildBroker(dir, port, scramPort);
        broker.launch();
        Runtime.getRuntime().addShutdownHook(new Thread(broker::destroy));
        return broker;
      } catch (IOException e) {
        throw new UncheckedIOException("cannot prepare the Kafka test broker", e);
      }
    }

    public String bootstrap() {
      return "127.0.0.1:" + port;
    }

    /**
     * A listener that takes only clients authenticated with {@link #SCRAM_MECHANISM}; users are added through
     * the admin client on {@link #bootstrap()} ({@code alterUserScramCredentials}).
     */
    public String scramBootstrap() {
      return "127.0.0.1:" + scramPort;
    }

    public long pid() {
      return process.pid();
    }

    /** SIGSTOP: the broker keeps its sockets open but answers nothing, like a frozen VM. */
    public void freeze() throws Exception {
      signal("-STOP");
    }

    /** SIGCONT: the frozen broker runs on. */
    public void thaw() throws Exception {
      signal("-CONT");
    }

    /** Kills the broker (SIGKILL, as in a crash); {@link #restart()} brings it back on the same port and data. */
    public void kill() throws InterruptedException {
      process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
    }

    public void restart() throws IOException {
      launch();
    }

    private void signal(String signal) throws Exception {
      Process kill = new ProcessBuilder("kill", signal, Long.toString(process.pid())).inheritIO().start();
      if (kill.waitFor() != 0) {
        throw new IllegalStateException("kill " + signal + " " + process.pid() + " failed");
      }
    }

    private void launch() throws IOException {
      process = javaProcess(dir, "broker", List.of(BrokerMain.class.getName(),
          dir.resolve("server.properties").toString())).start();
      try (Admin admin = admin(bootstrap())) {
        await("the Kafka test broker to start (log: " + dir.resolve("broker.log") + ")")
            .atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(200)).ignoreExceptions()
            .until(() -> {
              if (!process.isAlive()) {
                throw new IllegalStateException("the Kafka test broker exited: " + tail());
              }
              return !admin.describeCluster().nodes().get(2, TimeUnit.SECONDS).isEmpty();
            });
      }
    }

    private String tail() throws IOException {
      List<String> lines = Files.readAllLines(dir.resolve("broker.log"));
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 30), lines.size()));
    }

    /** Kills the broker (thawed first) and deletes its storage. */
    @Override
    public void close() {
      destroy();
    }

    private void destroy() {
      if (process != null) {
        try {
          signal("-CONT");
        } catch (Exception e) {
          // already gone
        }
        process.destroyForcibly();
      }
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        // a temp dir left behind is harmless
      }
    }

    private static void run(Path dir, String name, List<String> mainAndArgs) throws IOException {
      try {
        Process p = javaProcess(dir, name, mainAndArgs).start();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
          p.destroyForcibly();
          throw new IllegalStateException(name + " of the Kafka test broker failed: "
              + Files.readString(dir.resolve(name + ".log")));
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted", e);
      }
    }

    private static ProcessBuilder javaProcess(Path dir, String name, List<String> mainAndArgs) {
      String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
      List<String> command = new ArrayList<>(List.of(
          Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
          "-cp", classpath));
      command.addAll(mainAndArgs);
      return new ProcessBuilder(command).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve(name + ".log").toFile()));
    }

    private static int freePort() throws IOException {
      try (ServerSocket s = new ServerSocket(0)) {
        return s.getLocalPort();
      }
    }
  }
}
