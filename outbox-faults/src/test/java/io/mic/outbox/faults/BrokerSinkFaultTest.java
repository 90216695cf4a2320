package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Faults with RabbitMQ (the suite's own node: a durable quorum queue behind a topic exchange, publisher
 * confirms) and Kafka (the suite's own KRaft broker in a child JVM: a 3-partition topic keyed by aggregate)
 * as the broker. The checker reads what the broker holds: it drains the queue, or reads the topic from the
 * beginning, partition by partition. Neither broker drops a republication by a new process, so the
 * duplicates are bounded by what the killed worker had in flight, as with the recording broker.
 */
class BrokerSinkFaultTest {

  @Tag("fast")
  @ParameterizedTest(name = "SIGKILL {1}, {0}")
  @CsvSource({"rabbitmq, after-publish-before-ack, 1001", "kafka, after-ack-before-mark, 1102"})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killedWorker(String sink, String point, long seed) throws Exception {
    kill(sink, FaultPoint.parse(point), seed);
  }

  @Tag("full")
  @ParameterizedTest(name = "SIGKILL {1}, {0}")
  @CsvSource({"rabbitmq, after-ack-before-mark, 1002", "kafka, after-publish-before-ack, 1101"})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void killedWorkerFull(String sink, String point, long seed) throws Exception {
    kill(sink, FaultPoint.parse(point), seed);
  }

  private static void kill(String sink, FaultPoint point, long seed) throws Exception {
    int repetitions = Servers.full() ? 3 : 1;
    try (Scenario s = Scenario.of("SIGKILL " + point.label(), "ordered", sink, seed)) {
      s.repetitions = repetitions;
      s.produce();
      s.worker("survivor");
      for (int r = 0; r < repetitions; r++) {
        WorkerProcess victim = s.worker("victim-" + r, "fault=" + point.label(), "faultAt=3");
        victim.awaitLine("AT " + point.label(), Duration.ofSeconds(60));
        victim.kill();
        s.duplicateBound += CrashPointTest.bound(s, point);
        s.awaitProduced(30);
      }
      s.finish();
    }
  }

  /** The RabbitMQ application of the private node stopped for 6 s (retry horizon 0.3 s), then started. */
  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void rabbitMqStoppedPastTheRetryHorizon() throws Exception {
    try (Scenario s = Scenario.of("RabbitMQ stop_app, down 6 s, start_app", "ordered", "rabbitmq", 1003)) {
      outage(s, () -> Servers.rabbit().stopApp(), () -> Servers.rabbit().startApp());
    }
  }

  /** The Kafka broker frozen (SIGSTOP) for 6 s, longer than a send may take (3 s), then thawed. */
  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void kafkaFrozenPastTheRetryHorizon() throws Exception {
    try (Scenario s = Scenario.of("Kafka broker SIGSTOP 6 s, SIGCONT", "ordered", "kafka", 1103)) {
      outage(s, () -> Servers.kafka().freeze(), () -> Servers.kafka().thaw());
    }
  }

  interface Action {
    void run() throws Exception;
  }

  private static void outage(Scenario s, Action down, Action up) throws Exception {
    s.maxAttempts = 3;
    s.retryMs = 100;
    s.produce();
    s.worker("w1");
    s.worker("w2");
    s.awaitProduced(60);
    down.run();
    long start = System.nanoTime();
    try {
      Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> System.nanoTime() - start > 6_000_000_000L);
    } finally {
      up.run();
    }
    // publications cut off by the outage have an unknown outcome: retried, possibly twice on the broker
    s.duplicateBound = 2L * s.inFlight();
    s.awaitProduced(60);
    s.finish(); // nothing lost, order kept, no DLQ from the outage
    try (Connection c = s.dataSource.getConnection(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT max(attempts) FROM " + s.table)) {
      rs.next();
      assertThat(rs.getInt(1)).as("an outage burns no attempt").isEqualTo(1);
    }
  }
}
