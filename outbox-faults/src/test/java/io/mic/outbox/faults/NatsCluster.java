package io.mic.outbox.faults;

import io.nats.client.Connection;
import io.nats.client.ErrorListener;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.api.ClusterInfo;
import io.nats.client.api.Replica;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.awaitility.Awaitility;

/**
 * Three {@code nats-server} processes of the suite's own, clustered over loopback routes (JetStream on each,
 * server names {@code n0} to {@code n2}, a store directory each), so a stream can have three replicas and the
 * suite can kill its leader or two of the three nodes. Clients get the URLs of all three.
 */
final class NatsCluster implements AutoCloseable {
  static final int SIZE = 3;

  private final List<PrivateNats> nodes = new ArrayList<>();

  private NatsCluster() {}

  static NatsCluster start(String password) throws IOException {
    NatsCluster cluster = new NatsCluster();
    try {
      int[] clientPorts = IntStream.range(0, SIZE).map(i -> Shell.freePort()).toArray();
      int[] routePorts = IntStream.range(0, SIZE).map(i -> Shell.freePort()).toArray();
      for (int i = 0; i < SIZE; i++) {
        int self = i;
        String routes = IntStream.range(0, SIZE).filter(j -> j != self)
            .mapToObj(j -> "nats://127.0.0.1:" + routePorts[j]).collect(Collectors.joining(","));
        cluster.nodes.add(PrivateNats.node(Files.createTempDirectory("mic-faults-nats-n" + i + "-"), clientPorts[i],
            password, List.of("--server_name", name(i), "--cluster_name", "mic-faults",
                "--cluster", "nats://127.0.0.1:" + routePorts[i], "--routes", routes)));
      }
      for (PrivateNats node : cluster.nodes) {
        node.launch();
      }
      for (PrivateNats node : cluster.nodes) {
        node.awaitReady();
      }
      return cluster;
    } catch (IOException | RuntimeException e) {
      cluster.close();
      throw e;
    }
  }

  static String name(int node) {
    return "n" + node;
  }

  /** The URLs of the three servers with credentials, comma-separated: the client fails over between them. */
  String url() {
    return nodes.stream().map(PrivateNats::url).collect(Collectors.joining(","));
  }

  /** A connection for the test itself; it stays quiet about the nodes the suite killed on purpose. */
  Connection connect() throws IOException, InterruptedException {
    return Nats.connect(Options.builder().server(url()).connectionTimeout(Duration.ofSeconds(2))
        .maxReconnects(-1).errorListener(new ErrorListener() {}).build());
  }

  /**
   * How many messages {@code stream} holds, asked on a new connection: a long-lived one may sit on a killed
   * node while it reconnects, and the count is what measures the stall.
   */
  long messages(String stream) throws IOException, InterruptedException, JetStreamApiException {
    try (Connection c = Nats.connect(Options.builder().server(url()).connectionTimeout(Duration.ofSeconds(1))
        .maxReconnects(0).errorListener(new ErrorListener() {}).build())) {
      return c.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount();
    }
  }

  /** A file stream {@code name} on {@code name.>} replicated on all three nodes, 2-minute duplicate window. */
  void createStream(String name) throws IOException, InterruptedException, JetStreamApiException {
    try (Connection c = connect()) {
      c.jetStreamManagement().addStream(StreamConfiguration.builder().name(name).subjects(name + ".>")
          .storageType(StorageType.File).replicas(SIZE).duplicateWindow(Duration.ofMinutes(2)).build());
    }
    awaitAllCurrent(name);
  }

  /** The node leading {@code stream}'s replica group, once it has one that is not {@code former} (-1: any). */
  int leader(String stream, int former) throws IOException, InterruptedException {
    try (Connection c = connect()) {
      JetStreamManagement jsm = c.jetStreamManagement();
      String leader = Awaitility.await("a leader of stream " + stream).atMost(Duration.ofSeconds(60))
          .pollInterval(Duration.ofMillis(100)).ignoreExceptions()
          .until(() -> jsm.getStreamInfo(stream).getClusterInfo().getLeader(),
              l -> l != null && !l.equals(former < 0 ? null : name(former)));
      return Integer.parseInt(leader.substring(1));
    }
  }

  /** Waits until {@code stream} has a leader and both other replicas are current: the cluster is whole again. */
  void awaitAllCurrent(String stream) throws IOException, InterruptedException {
    try (Connection c = connect()) {
      JetStreamManagement jsm = c.jetStreamManagement();
      Awaitility.await("all replicas of stream " + stream + " current").atMost(Duration.ofSeconds(90))
          .pollInterval(Duration.ofMillis(200)).ignoreExceptions().until(() -> {
            ClusterInfo info = jsm.getStreamInfo(stream).getClusterInfo();
            List<Replica> replicas = info.getReplicas() == null ? List.of() : info.getReplicas();
            return info.getLeader() != null && replicas.size() == SIZE - 1
                && replicas.stream().allMatch(r -> r.isCurrent() && !r.isOffline());
          });
    }
  }

  /** SIGKILL of node {@code i}; its store stays for {@link #restart}. */
  void kill(int i) throws InterruptedException {
    nodes.get(i).kill();
  }

  /** Starts the given killed nodes again on their stores and waits until each answers JetStream requests. */
  void restart(int... which) throws IOException {
    for (int i : which) {
      nodes.get(i).launch();
    }
    for (int i : which) {
      nodes.get(i).awaitReady();
    }
  }

  String version() throws IOException, InterruptedException {
    return nodes.get(0).version();
  }

  @Override
  public void close() {
    nodes.forEach(PrivateNats::close);
  }
}
