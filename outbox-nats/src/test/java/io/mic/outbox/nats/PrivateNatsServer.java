package io.mic.outbox.nats;

import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * A nats-server of the test's own, with settings the shared server must not change (e.g. a small
 * {@code max_payload}), on a free port with a temporary JetStream directory. Skipped where no
 * {@code nats-server} binary exists, unless {@code CI=true}.
 */
final class PrivateNatsServer implements AutoCloseable {
  private static final Path BINARY = Path.of(System.getenv().getOrDefault("MIC_TEST_NATS_SERVER",
      "/usr/sbin/nats-server"));

  private Process process;
  private final Path dir;
  private final int port;

  private PrivateNatsServer(Process process, Path dir, int port) {
    this.process = process;
    this.dir = dir;
    this.port = port;
  }

  /** Starts a server with JetStream and the given configuration lines, e.g. {@code max_payload: 8192}. */
  static PrivateNatsServer start(String... configLines) throws IOException {
    if (!Files.isExecutable(BINARY)) {
      String message = "no nats-server binary at " + BINARY + ": install nats-server or set MIC_TEST_NATS_SERVER";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(message);
      }
      Assumptions.abort(message);
    }
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    Path dir = Files.createTempDirectory("mic-nats-");
    Files.write(dir.resolve("server.conf"), List.of(configLines), StandardCharsets.UTF_8);
    PrivateNatsServer server = new PrivateNatsServer(null, dir, port);
    server.launch();
    return server;
  }

  private void launch() throws IOException {
    Process p = new ProcessBuilder(BINARY.toString(), "-a", "127.0.0.1", "-p", String.valueOf(port), "-js",
        "-sd", dir.resolve("js").toString(), "-c", dir.resolve("server.conf").toString())
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve("server.log").toFile()))
        .start();
    process = p;
    await("nats-server on port " + port).atMost(Duration.ofSeconds(15)).until(() -> {
      if (!p.isAlive()) {
        throw new AssertionError("nats-server exited: " + Files.readString(dir.resolve("server.log")));
      }
      return answers(port);
    });
  }

  /** Stops the server, keeping its port and JetStream directory for {@link #restart()}. */
  void stop() throws InterruptedException {
    process.destroy();
    if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
    }
  }

  /** Starts the stopped server again on the same port, with its streams. */
  void restart() throws IOException {
    launch();
  }

  static boolean answers(int port) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 200);
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  String url() {
    return "nats://127.0.0.1:" + port;
  }

  @Override
  public void close() throws Exception {
    process.destroy();
    if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
      process.destroyForcibly();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
