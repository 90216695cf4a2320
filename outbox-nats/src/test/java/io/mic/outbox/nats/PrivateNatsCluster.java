package io.mic.outbox.nats;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * Three nats-server processes of the test's own, clustered over loopback with JetStream, each with a temporary
 * store. Skipped where no {@code nats-server} binary exists, unless {@code CI=true}.
 */
final class PrivateNatsCluster implements AutoCloseable {
  private static final Path BINARY = Path.of(System.getenv().getOrDefault("MIC_TEST_NATS_SERVER",
      "/usr/sbin/nats-server"));
  static final int SIZE = 3;

  private final Path dir;
  private final int[] clientPorts = new int[SIZE];
  private final int[] routePorts = new int[SIZE];
  private final Process[] processes = new Process[SIZE];

  private PrivateNatsCluster(Path dir) {
    this.dir = dir;
  }

  static PrivateNatsCluster start() throws IOException {
    if (!Files.isExecutable(BINARY)) {
      String message = "no nats-server binary at " + BINARY + ": install nats-server or set MIC_TEST_NATS_SERVER";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(message);
      }
      Assumptions.abort(message);
    }
    PrivateNatsCluster cluster = new PrivateNatsCluster(Files.createTempDirectory("mic-nats-cluster-"));
    for (int i = 0; i < SIZE; i++) {
      cluster.clientPorts[i] = freePort();
      cluster.routePorts[i] = freePort();
    }
    for (int i = 0; i < SIZE; i++) {
      cluster.configure(i);
      cluster.launch(i);
    }
    return cluster;
  }

  private void configure(int node) throws IOException {
    List<String> routes = new ArrayList<>();
    for (int i = 0; i < SIZE; i++) {
      if (i != node) {
        routes.add("nats-route://127.0.0.1:" + routePorts[i]);
      }
    }
    Files.write(dir.resolve("n" + node + ".conf"), List.of(
        "server_name: n" + node,
        "listen: 127.0.0.1:" + clientPorts[node],
        "jetstream { store_dir: \"" + dir.resolve("store-n" + node) + "\" }",
        "cluster {",
        "  name: mic",
        "  listen: 127.0.0.1:" + routePorts[node],
        "  routes: [" + String.join(", ", routes) + "]",
        "}"), StandardCharsets.UTF_8);
  }

  private void launch(int node) throws IOException {
    Path log = dir.resolve("n" + node + ".log");
    Process p = new ProcessBuilder(BINARY.toString(), "-c", dir.resolve("n" + node + ".conf").toString())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    processes[node] = p;
    await("nats-server n" + node).atMost(Duration.ofSeconds(15)).until(() -> {
      if (!p.isAlive()) {
        throw new AssertionError("nats-server n" + node + " exited: " + Files.readString(log));
      }
      return PrivateNatsServer.answers(clientPorts[node]);
    });
  }

  /** Stops node {@code node} (SIGKILL) and waits until its port is closed. */
  void kill(int node) throws InterruptedException {
    processes[node].destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    await("n" + node + " stopped").atMost(Duration.ofSeconds(10)).until(() -> !PrivateNatsServer.answers(
        clientPorts[node]));
  }

  /** Starts a killed node again, on its ports and store. */
  void restart(int node) throws IOException {
    launch(node);
  }

  String url(int node) {
    return "nats://127.0.0.1:" + clientPorts[node];
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  @Override
  public void close() throws IOException {
    for (Process p : processes) {
      if (p != null) {
        p.destroyForcibly();
      }
    }
    for (Process p : processes) {
      if (p != null) {
        try {
          p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    }
  }
}
