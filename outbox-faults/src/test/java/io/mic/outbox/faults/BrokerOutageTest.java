package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.time.Duration;
import org.awaitility.Awaitility;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The broker is down far past the retry horizon (maxAttempts 3, 100 ms first retry: ~0.3 s): no event
 * may reach the DLQ for it and no attempt may be burned.
 */
class BrokerOutageTest {

  @Tag("fast")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void recordingBrokerDown() throws Exception {
    try (Scenario s = Scenario.of("broker down past the retry horizon", "throughput", "recording", 501)) {
      s.maxAttempts = 3;
      s.retryMs = 100;
      s.produce();
      WorkerProcess w1 = s.worker("w1");
      WorkerProcess w2 = s.worker("w2");
      s.awaitProduced(30);
      Files.createFile(s.outage);
      long down = System.nanoTime();
      int target = s.producer.committed().size() + 150;
      // the fault is the outage's length: 5 s, appends going on, nothing publishable
      Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> System.nanoTime() - down > 5_000_000_000L
          && s.producer.committed().size() >= target);
      long outageMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - down);
      Files.delete(s.outage);
      s.finish(); // no DLQ (no poison), nothing lost
      assertThat(outageMillis).as("the outage outlasted the retry horizon many times").isGreaterThan(10 * 300);
      try (Connection c = s.dataSource.getConnection(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT max(attempts) FROM " + s.table)) {
        rs.next();
        assertThat(rs.getInt(1)).as("an outage burns no attempt").isEqualTo(1);
      }
      for (WorkerProcess w : new WorkerProcess[] {w1, w2}) {
        long warnings = Files.readAllLines(w.logs().get(1)).stream().filter(l -> l.contains(" WARN ")).count();
        assertThat(warnings).as("WARN lines of %s during a %d ms outage (rate-limited)", w.name(), outageMillis)
            .isLessThanOrEqualTo(4);
      }
    }
  }
}
