package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A RabbitMQ cluster of three nodes ({@link RabbitCluster}), a quorum queue with a member on each, behind a
 * topic exchange; the workers are given all three nodes as {@code addresses} and publish through node 0, the
 * first, with publisher confirms. One scenario stops the RabbitMQ application of the node holding the
 * queue's leader while the workers drain a backlog, and starts it again once the other two elected a leader;
 * the other stops the node the workers are connected to, so they must connect to the next node of the list. A publication whose confirm the failover cut off is published again, which
 * RabbitMQ stores again: the bound is what the workers had in flight and every event put back as unavailable
 * ({@link Failover#boundDuplicatesByReleases}).
 */
class RabbitClusterFaultTest {

  @Tag("full")
  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void leaderNodeStoppedMidDrainAndStarted() throws Exception {
    RabbitCluster cluster = Servers.rabbitCluster();
    try (Scenario s = Scenario.of("RabbitMQ 3 nodes, quorum queue: stop_app of the leader's node mid-drain,"
        + " start_app", "ordered", "rabbitmq-cluster", 1021)) {
      Callable<Long> held = () -> cluster.messages(0, s.stream);
      Failover.midDrain(s, held);
      int leader = cluster.leader(s.stream);
      assertThat(leader).as("the queue's leader, declared through node 1, is not on the workers' node 0").isNotZero();
      cluster.node(leader).stopApp();
      Awaitility.await().atMost(Duration.ofSeconds(60)).ignoreExceptions()
          .until(() -> cluster.leader(s.stream) != leader);
      s.stall.back(); // the other two members elected a leader: the queue takes messages again
      Failover.awaitMore(held, 50);
      cluster.node(leader).startApp();
      s.awaitProduced(60);
      Failover.boundDuplicatesByReleases(s);
      s.finish();
      Failover.assertNoAttemptBurned(s);
    }
  }

  @Tag("full")
  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void workersNodeStoppedMidDrainAndStarted() throws Exception {
    RabbitCluster cluster = Servers.rabbitCluster();
    try (Scenario s = Scenario.of("RabbitMQ 3 nodes, quorum queue: stop_app of the node the workers are connected"
        + " to mid-drain, start_app", "ordered", "rabbitmq-cluster", 1022)) {
      Callable<Long> held = () -> cluster.messages(1, s.stream); // node 1 stays up throughout
      Failover.midDrain(s, held);
      assertThat(cluster.nodesConnectedTo("mic-outbox", 1)).as("the workers connect to node 0, their list's first")
          .isEqualTo(Set.of(0));
      cluster.node(0).stopApp();
      s.stall.back(); // nodes 1 and 2 hold the queue's leader and a member: only the workers' connection is gone
      Failover.awaitMore(held, 50);
      assertThat(cluster.nodesConnectedTo("mic-outbox", 1)).as("the workers moved to node 1, the next in their list")
          .isEqualTo(Set.of(1));
      cluster.node(0).startApp();
      s.awaitProduced(60);
      Failover.boundDuplicatesByReleases(s);
      s.finish();
      Failover.assertNoAttemptBurned(s);
    }
  }
}
