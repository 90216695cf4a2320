package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.jdbc.OutboxDeadLetters;
import java.nio.file.Files;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Workers holding aggregates behind their poison events; the consumer is fixed, the dead events are redriven
 * and a worker is SIGKILLed at once, mid-redrive: every redriven event is published before the events that
 * waited behind it (the checker counts an event published before its predecessor as an order violation),
 * nothing is lost and the DLQ ends empty.
 */
class HeldAggregateCrashTest {

  @Tag("fast")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void aWorkerKilledDuringARedriveOfHeldAggregatesPublishesNothingOutOfOrder() throws Exception {
    try (Scenario s = Scenario.of("SIGKILL during a redrive of held aggregates", "ordered", "recording", 409)) {
      s.hold = true;
      s.poison = 4;
      s.maxAttempts = 2;
      s.retryMs = 50;
      s.produce();
      WorkerProcess w1 = s.worker("w1");
      s.worker("w2");
      Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> s.producer.poisonIds().size() == 4
          && s.tableState().dlq().containsAll(s.producer.poisonIds()));
      s.awaitProduced(40); // the held aggregates' later events wait behind their dead ones
      OutboxDeadLetters deadLetters = OutboxDeadLetters.builder().store(s.store).build();
      assertThat(deadLetters.heldAggregates()).isNotEmpty();

      Files.createFile(s.outage.resolveSibling("poison-cured"));
      s.poisonCured = true;
      assertThat(deadLetters.redriveAll()).isEqualTo(4);
      w1.kill();
      s.duplicateBound += s.inFlight(); // what the killed worker had published and not marked
      s.worker("w3");
      s.awaitProduced(20);
      s.finish(); // no order violation, nothing lost, the DLQ empty
      assertThat(deadLetters.heldAggregates()).isEmpty();
    }
  }
}
