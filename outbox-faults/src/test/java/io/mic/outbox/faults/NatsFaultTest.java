package io.mic.outbox.faults;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Faults with NATS JetStream as the broker (the suite's own nats-server, a file stream with a 2-minute
 * duplicate window). Every republication happens inside the window with the same {@code Nats-Msg-Id},
 * so the stream must hold each event exactly once: the duplicate bound is 0.
 */
class NatsFaultTest {

  @Tag("fast")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killedAfterPublishBeforeAck() throws Exception {
    int repetitions = Servers.full() ? 3 : 1;
    try (Scenario s = Scenario.of("SIGKILL after-publish-before-ack", "ordered", "nats", 601)) {
      s.repetitions = repetitions;
      s.produce();
      s.worker("survivor");
      for (int r = 0; r < repetitions; r++) {
        WorkerProcess victim = s.worker("victim-" + r, "fault=after-publish-before-ack", "faultAt=3");
        victim.awaitLine("AT after-publish-before-ack", Duration.ofSeconds(60));
        victim.kill();
        s.awaitProduced(30);
      }
      s.finish();
    }
  }

  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void brokerKilledPastTheRetryHorizon() throws Exception {
    try (Scenario s = Scenario.of("nats-server SIGKILL, down 6 s, restarted", "ordered", "nats", 602)) {
      s.maxAttempts = 3;
      s.retryMs = 100;
      s.produce();
      s.worker("w1");
      s.worker("w2");
      s.awaitProduced(60);
      Servers.nats().kill();
      long down = System.nanoTime();
      Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> System.nanoTime() - down > 6_000_000_000L);
      Servers.nats().startServer();
      s.awaitProduced(60);
      s.finish(); // no DLQ from the outage, nothing lost, no duplicate in the stream
    }
  }

  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void brokerConnectionsCutOffAndReset() throws Exception {
    try (Scenario s = Scenario.of("NATS proxy: blackhole 5 s, reset, 150 ms delay", "ordered", "nats", 603);
        TcpProxy proxy = new TcpProxy(Servers.nats().port())) {
      s.natsPort = proxy.port();
      s.repetitions = 3;
      s.produce();
      s.worker("w1");
      s.worker("w2");
      s.awaitProduced(40);
      proxy.blackhole();
      long cut = System.nanoTime();
      Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> System.nanoTime() - cut > 5_000_000_000L);
      proxy.heal();
      s.awaitProduced(40);
      proxy.resetAll();
      s.awaitProduced(40);
      proxy.delay(150);
      s.awaitProduced(40);
      proxy.heal();
      s.finish();
    }
  }
}
