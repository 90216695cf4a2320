package io.mic.outbox.faults;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Faults with NATS JetStream as the broker (the suite's own nats-server, a file stream with a 2-minute
 * duplicate window). Every republication happens inside the window with the same {@code Nats-Msg-Id},
 * so the stream must hold each event exactly once: the duplicate bound is 0.
 */
class NatsFaultTest {

  /**
   * In throughput mode the worker sends each batch through the publisher's channel before the last one's
   * PubAcks are all in, so a kill finds up to three batches published and not marked.
   */
  @Tag("fast")
  @ParameterizedTest(name = "SIGKILL after-publish-before-ack, {0}")
  @CsvSource({"ordered, 601", "throughput, 611"})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killedAfterPublishBeforeAck(String mode, long seed) throws Exception {
    int repetitions = Servers.full() ? 3 : 1;
    try (Scenario s = Scenario.of("SIGKILL after-publish-before-ack", mode, "nats", seed)) {
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
  @ParameterizedTest(name = "nats-server SIGKILL, down 6 s, restarted, {0}")
  @CsvSource({"ordered, 602", "throughput, 612"})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void brokerKilledPastTheRetryHorizon(String mode, long seed) throws Exception {
    try (Scenario s = Scenario.of("nats-server SIGKILL, down 6 s, restarted", mode, "nats", seed)) {
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
  @ParameterizedTest(name = "NATS proxy: blackhole 5 s, reset, 150 ms delay, {0}")
  @CsvSource({"ordered, 603", "throughput, 613"})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void brokerConnectionsCutOffAndReset(String mode, long seed) throws Exception {
    try (Scenario s = Scenario.of("NATS proxy: blackhole 5 s, reset, 150 ms delay", mode, "nats", seed);
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
