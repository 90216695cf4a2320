package io.mic.outbox.faults;

import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.File;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A NATS server with JetStream of the suite's own ({@code /usr/sbin/nats-server}), on a free loopback port
 * with its store in a temporary directory and a user with a test password, so the suite can kill and
 * restart it without touching the shared server. {@link #close()} kills it and deletes the directory.
 */
public final class PrivateNats implements AutoCloseable {
  public static final String BINARY = "/usr/sbin/nats-server";
  public static final String USER = "faults";

  private final Path dir;
  private final int port;
  private final String password;
  /** The server's name and cluster options when it is a node of a {@link NatsCluster}; empty otherwise. */
  private final List<String> clusterArgs;
  private Process process;

  private PrivateNats(Path dir, int port, String password, List<String> clusterArgs) {
    this.dir = dir;
    this.port = port;
    this.password = password;
    this.clusterArgs = clusterArgs;
  }

  /** A node of a cluster, not started: {@link #launch()} it with the others, then {@link #awaitReady()}. */
  static PrivateNats node(Path dir, int port, String password, List<String> clusterArgs) {
    return new PrivateNats(dir, port, password, clusterArgs);
  }

  public static PrivateNats start(String password) throws IOException {
    PrivateNats nats = new PrivateNats(Files.createTempDirectory("mic-faults-nats-"), Shell.freePort(), password,
        List.of());
    try {
      nats.startServer();
      return nats;
    } catch (IOException | RuntimeException e) {
      nats.close();
      throw e;
    }
  }

  public int port() {
    return port;
  }

  /** The URL with credentials, through {@code port} (the server's, or a proxy's in front of it). */
  public String url(int port) {
    return "nats://" + USER + ":" + password + "@127.0.0.1:" + port;
  }

  public String url() {
    return url(port);
  }

  public synchronized void startServer() throws IOException {
    launch();
    awaitReady();
  }

  /** Starts the process on the same port and store; a cluster node answers only once the cluster has a quorum. */
  synchronized void launch() throws IOException {
    List<String> command = new ArrayList<>(List.of(BINARY, "-a", "127.0.0.1", "-p", Integer.toString(port), "-js",
        "-sd", dir.resolve("store").toString(), "--user", USER, "--pass", password));
    command.addAll(clusterArgs);
    process = new ProcessBuilder(command)
        .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(new File(dir.toFile(), "server.log")))
        .start();
  }

  /** Waits until this server answers JetStream requests (in a cluster: once a meta leader is elected). */
  synchronized void awaitReady() throws IOException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (true) {
      try (Connection c = connect()) {
        c.jetStreamManagement().getAccountStatistics();
        return;
      } catch (IOException | JetStreamApiException e) {
        if (System.nanoTime() > deadline || !process.isAlive()) {
          throw new IOException("nats-server did not start on port " + port + " (see " + dir + "/server.log)", e);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IOException("interrupted while starting nats-server", e);
      }
      sleepQuietly(100);
    }
  }

  /** Kills the server at once ({@code SIGKILL}): acknowledged messages are on disk only as far as it synced. */
  public synchronized void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
      while (portOpen()) {
        Thread.sleep(20);
      }
    }
  }

  private boolean portOpen() {
    try (Socket s = new Socket("127.0.0.1", port)) {
      return true;
    } catch (IOException e) {
      return false;
    }
  }

  /** A connection for the test itself: stream management and reading what was delivered. */
  public Connection connect() throws IOException, InterruptedException {
    return Nats.connect(Options.builder().server(url()).connectionTimeout(Duration.ofSeconds(2))
        .maxReconnects(-1).build());
  }

  /** A file stream {@code name} on {@code name.>}, duplicate window as given. */
  public void createStream(String name, Duration duplicateWindow) throws IOException, InterruptedException,
      JetStreamApiException {
    try (Connection c = connect()) {
      c.jetStreamManagement().addStream(StreamConfiguration.builder().name(name).subjects(name + ".>")
          .storageType(StorageType.File).duplicateWindow(duplicateWindow).build());
    }
  }

  public String version() throws IOException, InterruptedException {
    try (Connection c = connect()) {
      return "nats-server " + c.getServerInfo().getVersion();
    }
  }

  private static void sleepQuietly(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Override
  public synchronized void close() {
    try {
      kill();
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
