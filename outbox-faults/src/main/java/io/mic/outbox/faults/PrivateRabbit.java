package io.mic.outbox.faults;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.mic.outbox.OutboxHeaders;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

/**
 * A RabbitMQ node of the suite's own ({@code /usr/lib/rabbitmq/bin/rabbitmq-server}, run as the current
 * user): its own node name, AMQP and distribution ports, Mnesia and log directories, Erlang cookie and
 * configuration in a temporary directory, no plugin (management off), one user with a test password. The
 * suite stops and starts its RabbitMQ application without touching the shared node; {@link #close()}
 * stops the node and deletes the directory.
 */
public final class PrivateRabbit implements AutoCloseable {
  public static final String BIN = "/usr/lib/rabbitmq/bin";
  public static final String USER = "faults";

  private final Path dir;
  private final String node;
  private final int port;
  private final int distPort;
  private final String password;
  /** The Erlang cookie, shared by the nodes of a cluster; {@code null}: the node makes its own. */
  private final String cookie;
  private Process process;

  private PrivateRabbit(Path dir, int port, int distPort, String password, String cookie) {
    this.dir = dir;
    this.node = "micfaults" + port + "@localhost";
    this.port = port;
    this.distPort = distPort;
    this.password = password;
    this.cookie = cookie;
  }

  public static PrivateRabbit start(String password) throws IOException {
    return start(password, null);
  }

  /** A node with the given Erlang cookie: nodes that share one can form a cluster ({@link #joinCluster}). */
  public static PrivateRabbit start(String password, String cookie) throws IOException {
    PrivateRabbit rabbit = new PrivateRabbit(Files.createTempDirectory("mic-faults-rabbitmq-"), Shell.freePort(),
        Shell.freePort(), password, cookie);
    try {
      rabbit.launch();
      return rabbit;
    } catch (IOException | RuntimeException e) {
      rabbit.close();
      throw e;
    }
  }

  private void launch() throws IOException {
    Files.createDirectories(dir.resolve("mnesia"));
    Files.createDirectories(dir.resolve("log"));
    Files.writeString(dir.resolve("enabled_plugins"), "[].\n", StandardCharsets.UTF_8);
    Files.writeString(dir.resolve("rabbitmq-env.conf"), "", StandardCharsets.UTF_8);
    if (cookie != null) { // in HOME, where the node and rabbitmqctl read it; Erlang wants it private
      Path file = dir.resolve(".erlang.cookie");
      Files.writeString(file, cookie, StandardCharsets.US_ASCII);
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("r--------"));
    }
    Files.writeString(dir.resolve("rabbitmq.conf"), String.join("\n",
        "listeners.tcp.default = 127.0.0.1:" + port,
        "default_user = " + USER,
        "default_pass = " + password,
        "default_permissions.configure = .*",
        "default_permissions.read = .*",
        "default_permissions.write = .*",
        "loopback_users = none",
        ""), StandardCharsets.UTF_8);
    ProcessBuilder pb = new ProcessBuilder(BIN + "/rabbitmq-server").directory(dir.toFile())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(new File(dir.toFile(), "server.out")));
    environment(pb.environment());
    process = pb.start();
    process.getOutputStream().close();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
    while (true) {
      try (Connection c = connect()) {
        return;
      } catch (IOException | TimeoutException e) {
        if (System.nanoTime() > deadline || !process.isAlive()) {
          throw new IOException("the private RabbitMQ node " + node + " did not start on port " + port + " (see " + dir
              + "/server.out and " + dir + "/log)", e);
        }
      }
      sleepQuietly(250);
    }
  }

  /** Everything that keeps this node apart from the machine's own: names, ports, files, cookie (in HOME). */
  private void environment(Map<String, String> env) {
    env.put("HOME", dir.toString());
    env.put("RABBITMQ_CONF_ENV_FILE", dir.resolve("rabbitmq-env.conf").toString());
    env.put("RABBITMQ_NODENAME", node);
    env.put("RABBITMQ_NODE_IP_ADDRESS", "127.0.0.1");
    env.put("RABBITMQ_NODE_PORT", Integer.toString(port));
    env.put("RABBITMQ_DIST_PORT", Integer.toString(distPort));
    env.put("RABBITMQ_MNESIA_BASE", dir.resolve("mnesia").toString());
    env.put("RABBITMQ_LOG_BASE", dir.resolve("log").toString());
    env.put("RABBITMQ_CONFIG_FILE", dir.resolve("rabbitmq").toString());
    env.put("RABBITMQ_ENABLED_PLUGINS_FILE", dir.resolve("enabled_plugins").toString());
    env.put("RABBITMQ_PID_FILE", dir.resolve("node.pid").toString());
    // no busy-waiting schedulers: the suite's nodes share two cores with everything else
    env.put("RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS", "-kernel inet_dist_use_interface {127,0,0,1}"
        + " +sbwt none +sbwtdcpu none +sbwtdio none");
    env.put("ERL_EPMD_ADDRESS", "127.0.0.1");
  }

  /** {@code rabbitmqctl} against this node only. */
  String ctl(long timeoutSeconds, String... args) {
    List<String> command = new ArrayList<>(List.of("env", "HOME=" + dir, "ERL_EPMD_ADDRESS=127.0.0.1",
        BIN + "/rabbitmqctl", "-n", node));
    command.addAll(List.of(args));
    return Shell.run(timeoutSeconds, command.toArray(String[]::new));
  }

  /** Stops the RabbitMQ application of this node: connections close, the port stops answering. */
  public void stopApp() {
    ctl(60, "stop_app");
  }

  /** Starts it again on the same data: durable queues and their persistent messages come back. */
  public void startApp() {
    ctl(90, "start_app");
    ctl(90, "await_startup");
  }

  /** Raises a memory alarm on this node (high watermark 0): the broker blocks every connection that publishes. */
  public void raiseMemoryAlarm() {
    ctl(60, "set_vm_memory_high_watermark", "0");
  }

  /** Clears the alarm: the default watermark again. */
  public void clearMemoryAlarm() {
    ctl(60, "set_vm_memory_high_watermark", "0.4");
  }

  /** The Erlang node name, {@code micfaults<port>@localhost}. */
  public String node() {
    return node;
  }

  /** Makes this fresh node a member of {@code first}'s cluster (its own data is reset). */
  public void joinCluster(PrivateRabbit first) {
    ctl(60, "stop_app");
    ctl(60, "reset");
    ctl(60, "join_cluster", first.node);
    ctl(90, "start_app");
    ctl(90, "await_startup");
  }

  public int port() {
    return port;
  }

  /** The AMQP URI with credentials, through {@code port} (the node's, or a proxy's in front of it). */
  public String uri(int port) {
    return "amqp://" + USER + ":" + password + "@127.0.0.1:" + port;
  }

  public String uri() {
    return uri(port);
  }

  public Connection connect() throws IOException, TimeoutException {
    ConnectionFactory f = new ConnectionFactory();
    f.setHost("127.0.0.1");
    f.setPort(port);
    f.setUsername(USER);
    f.setPassword(password);
    f.setConnectionTimeout(2_000);
    f.setAutomaticRecoveryEnabled(false);
    return f.newConnection("mic-faults-test");
  }

  /** A durable topic exchange {@code name} and a durable quorum queue {@code name} bound to it for every key. */
  public void declare(String name) throws IOException, TimeoutException {
    try (Connection c = connect(); Channel ch = c.createChannel()) {
      ch.exchangeDeclare(name, "topic", true);
      ch.queueDeclare(name, true, false, false, Map.of("x-queue-type", "quorum"));
      ch.queueBind(name, name, "#");
    }
  }

  /**
   * Takes every message now in queue {@code name}, in queue order (acknowledged as taken, so a later call
   * returns only what arrived since).
   */
  public List<Delivery> drain(String name) throws IOException, TimeoutException {
    List<Delivery> all = new ArrayList<>();
    try (Connection c = connect(); Channel ch = c.createChannel()) {
      GetResponse m;
      while ((m = ch.basicGet(name, true)) != null) {
        Map<String, Object> headers = m.getProps().getHeaders();
        all.add(new Delivery(UUID.fromString(headers.get(OutboxHeaders.EVENT_ID).toString()),
            headers.get(OutboxHeaders.AGGREGATE_ID).toString(),
            Workload.sequenceOf(new String(m.getBody(), StandardCharsets.UTF_8)), 0));
      }
    }
    return all;
  }

  /** Deletes the queue and exchange {@code name}. */
  public void delete(String name) throws IOException, TimeoutException {
    try (Connection c = connect(); Channel ch = c.createChannel()) {
      ch.queueDelete(name);
      ch.exchangeDelete(name);
    }
  }

  public String version() throws IOException, TimeoutException {
    try (Connection c = connect()) {
      return "RabbitMQ " + c.getServerProperties().get("version");
    }
  }

  private static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Stops the node (its Erlang VM and children, killed if it does not stop in time) and deletes its directory. */
  @Override
  public synchronized void close() {
    try {
      if (process != null && process.isAlive()) {
        try {
          ctl(30, "stop");
        } catch (RuntimeException e) {
          System.err.println("rabbitmqctl stop of " + node + " failed, killing it: " + e.getMessage());
        }
        process.descendants().forEach(ProcessHandle::destroyForcibly);
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      } catch (IOException e) {
        System.err.println("could not delete " + dir + ": " + e.getMessage());
      }
    }
  }
}
