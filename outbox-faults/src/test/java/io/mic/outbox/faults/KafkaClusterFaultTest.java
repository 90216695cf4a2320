package io.mic.outbox.faults;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A Kafka cluster of three KRaft nodes in child JVMs ({@link KafkaCluster}), a topic of 3 partitions with
 * replication factor 3 and {@code min.insync.replicas=2}; the workers' producers ({@code acks=all},
 * idempotent) know all three brokers. Each fault hits the cluster while the workers drain a backlog: the
 * leader of partition 0 killed, or two of the three nodes killed for 10 s (no in-sync quorum, no controller
 * quorum). A send cut off by the fault has an unknown outcome and is published again by the dispatcher, which
 * Kafka stores again: every event put back as unavailable may be stored twice ({@link
 * Failover#boundDuplicatesByReleases}).
 */
class KafkaClusterFaultTest {

  @Tag("full")
  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void partitionLeaderKilledMidDrainAndRestarted() throws Exception {
    KafkaCluster cluster = Servers.kafkaCluster();
    try (Scenario s = Scenario.of("Kafka RF 3, min ISR 2: SIGKILL of a partition leader mid-drain, restarted",
        "ordered", "kafka-cluster", 1121)) {
      Callable<Long> held = () -> cluster.records(s.stream);
      Failover.midDrain(s, held);
      int leader = cluster.leader(s.stream, 0, -1);
      cluster.kill(leader);
      cluster.leader(s.stream, 0, leader);
      cluster.awaitInSync(s.stream, 2);
      s.stall.back(); // every partition has a leader and two replicas in sync: acks=all writes succeed again
      Failover.awaitMore(held, 50);
      cluster.restart(leader);
      cluster.awaitInSync(s.stream);
      s.awaitProduced(60);
      Failover.boundDuplicatesByReleases(s);
      s.finish();
      Failover.assertNoAttemptBurned(s);
    }
  }

  @Tag("full")
  @Test
  @Timeout(value = 8, unit = TimeUnit.MINUTES)
  void twoOfThreeKilledForTenSecondsThenRestarted() throws Exception {
    KafkaCluster cluster = Servers.kafkaCluster();
    try (Scenario s = Scenario.of("Kafka RF 3, min ISR 2: SIGKILL of two nodes mid-drain, 10 s, restarted",
        "ordered", "kafka-cluster", 1122)) {
      Callable<Long> held = () -> cluster.records(s.stream);
      Failover.midDrain(s, held);
      int leader = cluster.leader(s.stream, 0, -1);
      int other = (leader + 1) % KafkaCluster.SIZE;
      cluster.kill(leader);
      cluster.kill(other);
      Failover.outage(Duration.ofSeconds(10));
      cluster.restart(leader, other);
      cluster.awaitInSync(s.stream, 2);
      s.stall.back();
      Failover.awaitMore(held, 50);
      cluster.awaitInSync(s.stream);
      s.awaitProduced(60);
      Failover.boundDuplicatesByReleases(s);
      s.finish();
      Failover.assertNoAttemptBurned(s);
    }
  }
}
