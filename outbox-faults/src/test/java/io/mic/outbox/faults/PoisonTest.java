package io.mic.outbox.faults;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

/** Events the broker always refuses: exactly those reach the DLQ after maxAttempts; the rest flows. */
class PoisonTest {

  @Tag("fast")
  @ParameterizedTest(name = "poison, {0}")
  @ValueSource(strings = {"ordered", "throughput"})
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void poisonEventsReachTheDlq(String mode) throws Exception {
    try (Scenario s = Scenario.of("poison events (5)", mode, "recording", 401)) {
      s.poison = 5;
      s.maxAttempts = 3;
      s.retryMs = 50;
      s.produce();
      s.worker("w1");
      s.worker("w2");
      Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> s.producer.poisonIds().size() == 5);
      s.awaitProduced(30);
      s.finish(); // asserts DLQ = exactly the poison ids, nothing else lost
    }
  }
}
