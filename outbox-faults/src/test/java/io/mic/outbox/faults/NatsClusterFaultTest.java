package io.mic.outbox.faults;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A JetStream cluster of three nats-server processes ({@link NatsCluster}), a file stream with three replicas
 * and a 2-minute duplicate window; the workers know all three servers. Each fault hits the cluster while the
 * workers drain a backlog and the producers keep appending: the stream leader killed, or two of the three
 * nodes killed (no quorum) for 10 s. Every republication carries the same {@code Nats-Msg-Id} inside the
 * window, so the stream must hold each event once: the duplicate bound is 0, as on one server.
 */
class NatsClusterFaultTest {

  @Tag("fast")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void streamLeaderKilledMidDrainAndRestarted() throws Exception {
    NatsCluster cluster = Servers.natsCluster();
    try (Scenario s = Scenario.of("JetStream R3: SIGKILL of the stream leader mid-drain, restarted", "ordered",
        "nats-cluster", 621)) {
      Callable<Long> held = () -> cluster.messages(s.stream);
      Failover.midDrain(s, held);
      int leader = cluster.leader(s.stream, -1);
      cluster.kill(leader);
      cluster.leader(s.stream, leader);
      s.stall.back(); // the two others elected a leader: the stream takes events again
      Failover.awaitMore(held, 50);
      cluster.restart(leader);
      cluster.awaitAllCurrent(s.stream);
      s.awaitProduced(60);
      s.finish();
      Failover.assertNoAttemptBurned(s);
    }
  }

  @Tag("full") // 30 to 70 s: the fast subset keeps the leader kill
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void twoOfThreeKilledForTenSecondsThenRestarted() throws Exception {
    NatsCluster cluster = Servers.natsCluster();
    try (Scenario s = Scenario.of("JetStream R3: SIGKILL of two nodes mid-drain (no quorum), 10 s, restarted",
        "ordered", "nats-cluster", 622)) {
      Callable<Long> held = () -> cluster.messages(s.stream);
      Failover.midDrain(s, held);
      int leader = cluster.leader(s.stream, -1);
      int follower = (leader + 1) % NatsCluster.SIZE;
      cluster.kill(leader);
      cluster.kill(follower);
      Failover.outage(Duration.ofSeconds(10));
      cluster.restart(leader, follower);
      cluster.leader(s.stream, -1);
      s.stall.back(); // the stream has a leader again
      Failover.awaitMore(held, 50);
      cluster.awaitAllCurrent(s.stream);
      s.awaitProduced(60);
      s.finish();
      Failover.assertNoAttemptBurned(s);
    }
  }
}
