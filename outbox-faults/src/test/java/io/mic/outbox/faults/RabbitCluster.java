package io.mic.outbox.faults;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.TreeSet;

/**
 * Three RabbitMQ nodes of the suite's own ({@link PrivateRabbit}: node names {@code micfaults<port>@localhost},
 * their own AMQP and distribution ports, Mnesia directories and one Erlang cookie of their own), joined into
 * one cluster with {@code rabbitmqctl join_cluster}. Every {@code rabbitmqctl} call names one of these nodes.
 */
final class RabbitCluster implements AutoCloseable {
  static final int SIZE = 3;

  private final List<PrivateRabbit> nodes = new ArrayList<>();

  private RabbitCluster() {}

  static RabbitCluster start(String password) throws Exception {
    byte[] b = new byte[16];
    new SecureRandom().nextBytes(b);
    String cookie = HexFormat.of().formatHex(b).toUpperCase(Locale.ROOT);
    RabbitCluster cluster = new RabbitCluster();
    try {
      for (int i = 0; i < SIZE; i++) {
        cluster.nodes.add(PrivateRabbit.start(password, cookie));
      }
      for (int i = 1; i < SIZE; i++) {
        cluster.nodes.get(i).joinCluster(cluster.nodes.get(0));
      }
      return cluster;
    } catch (Exception e) {
      cluster.close();
      throw e;
    }
  }

  PrivateRabbit node(int i) {
    return nodes.get(i);
  }

  /** The index of the node holding the leader of quorum queue {@code queue}, as node 0 sees it. */
  int leader(String queue) {
    for (String line : nodes.get(0).ctl(60, "list_queues", "-q", "--no-table-headers", "name", "leader").split("\n")) {
      String[] cells = line.trim().split("\\s+");
      if (cells.length == 2 && cells[0].equals(queue)) {
        for (int i = 0; i < SIZE; i++) {
          if (nodes.get(i).node().equals(cells[1])) {
            return i;
          }
        }
      }
    }
    throw new IllegalStateException("no leader of queue " + queue + " among " + nodes.stream().map(PrivateRabbit::node)
        .toList());
  }

  /**
   * The indexes of the nodes that hold a connection named {@code connectionName} (the publishers' client
   * property), asked through node {@code through}.
   */
  Set<Integer> nodesConnectedTo(String connectionName, int through) {
    Set<Integer> connected = new TreeSet<>();
    for (String line : nodes.get(through).ctl(60, "list_connections", "-q", "--no-table-headers", "port",
        "client_properties").split("\n")) {
      String[] cells = line.trim().split("\\s+", 2);
      if (cells.length == 2 && cells[1].contains("\"" + connectionName + "\"")) {
        for (int i = 0; i < SIZE; i++) {
          if (Integer.toString(nodes.get(i).port()).equals(cells[0])) {
            connected.add(i);
          }
        }
      }
    }
    return connected;
  }

  /** {@code host:port} of every node, in node order: the publishers' {@code addresses}. */
  String addresses() {
    return String.join(",", nodes.stream().map(n -> "127.0.0.1:" + n.port()).toList());
  }

  /** How many messages {@code queue} holds, asked through node {@code i}. */
  long messages(int i, String queue) throws Exception {
    try (Connection c = nodes.get(i).connect(); Channel ch = c.createChannel()) {
      return ch.queueDeclarePassive(queue).getMessageCount();
    }
  }

  @Override
  public void close() {
    nodes.forEach(PrivateRabbit::close);
  }
}
