package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.nats.client.Connection;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfEnvironmentVariable;

/**
 * Restarts the local NATS server (127.0.0.1:4222) several times while four workers drain a backlog: every
 * event must be dispatched within a bound, none lost, no attempt counted for the outage, nothing in the
 * DLQ. It stops a shared server, so it runs only with {@code MIC_TEST_NATS_RESTART=true} (set by
 * {@code .ci/run}, where no other build shares the server); it always starts the server again, as the
 * machine starts it.
 */
@EnabledIfEnvironmentVariable(named = "MIC_TEST_NATS_RESTART", matches = "true")
class NatsRestartTest {
  private static final String NATS_SERVER = "/usr/sbin/nats-server";
  private static final List<String> START = List.of("start-stop-daemon", "--start", "--oknodo", "--background",
      "--exec", NATS_SERVER, "--", "-a", "127.0.0.1", "-p", "4222", "-js", "-sd", "/var/lib/nats-server", "-l",
      "/var/log/nats-server.log");
  /** Restarts per run: {@code MIC_TEST_NATS_RESTART_ROUNDS}, 4 by default (CI runs 2). */
  private static final int ROUNDS = Integer.parseInt(System.getenv().getOrDefault("MIC_TEST_NATS_RESTART_ROUNDS", "4"));
  private static final int EVENTS_PER_ROUND = 10_000;
  private static final int AGGREGATES = 200;
  private static final Duration OUTAGE = Duration.ofSeconds(8);
  /** After NATS is back: reconnection, the 5 s PubAck timeouts of the batches in flight, and the rest of the drain. */
  private static final Duration DRAIN_BOUND = Duration.ofSeconds(60);

  @Test
  void fourWorkersDrainEverythingAcrossRepeatedNatsRestarts() throws Exception {
    Connection admin = NatsTestServer.connect();
    String stream = NatsTestServer.uniqueName();
    NatsTestServer.createStream(admin, stream, c -> c);
    admin.close();
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    List<OutboxEvent> all = new ArrayList<>();
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(NatsTestServer.url()).build();
        AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher)
            .useClaim(true).leaseTtl(Duration.ofSeconds(60)).preserveAggregateOrder(true).maxAttempts(3)
            .workers(4).pollInterval(Duration.ofMillis(100)).build()) {
      dispatcher.start();
      for (int round = 1; round <= ROUNDS; round++) {
        List<OutboxEvent> backlog = new ArrayList<>();
        for (int i = 0; i < EVENTS_PER_ROUND; i++) {
          backlog.add(OutboxEvent.builder().aggregate("order", "o-" + (i % AGGREGATES))
              .topic(stream + ".created").payload("{\"round\":" + round + ",\"n\":" + i + "}").build());
        }
        store.append(backlog);
        all.addAll(backlog);
        long before = all.size() - EVENTS_PER_ROUND;
        await("round " + round + " under way").atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(5))
            .until(() -> dispatched(store) >= before + EVENTS_PER_ROUND / 10);
        try {
          stopNats();
          long pendingAtStop = all.size() - dispatched(store);
          assertThat(pendingAtStop).as("backlog left when NATS stopped in round %d", round).isPositive();
          Thread.sleep(OUTAGE.toMillis()); // the outage itself, not a wait for a condition
        } finally {
          startNats();
        }
        long restartedAt = System.nanoTime();
        await("round " + round + " drained after the restart").atMost(DRAIN_BOUND)
            .pollInterval(Duration.ofMillis(200)).until(() -> dispatched(store) == all.size());
        System.out.printf("round %d: drained %d s after NATS was back%n", round,
            Duration.ofNanos(System.nanoTime() - restartedAt).toSeconds());
      }
    }

    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, (long) all.size())
        .containsEntry(OutboxStatus.PENDING, 0L).containsEntry(OutboxStatus.PROCESSING, 0L)
        .containsEntry(OutboxStatus.DLQ, 0L);
    assertThat(all).allSatisfy(e -> assertThat(store.find(e.id()).orElseThrow().attempts())
        .as("attempts of %s", e.id()).isEqualTo(1));
    Connection check = NatsTestServer.connect();
    try {
      assertThat(check.jetStreamManagement().getStreamInfo(stream).getStreamState().getMsgCount())
          .isEqualTo(all.size());
    } finally {
      NatsTestServer.deleteStream(check, stream);
      check.close();
    }
  }

  private static long dispatched(InMemoryOutboxStore store) {
    return store.countByStatus().get(OutboxStatus.DISPATCHED);
  }

  /** Stops the server listening on 4222 by its process id (SIGTERM), and waits until the port is closed. */
  private static void stopNats() {
    Optional<ProcessHandle> server = ProcessHandle.allProcesses()
        .filter(p -> p.info().command().map(NATS_SERVER::equals).orElse(false))
        .filter(p -> p.info().arguments().map(a -> String.join(" ", a).contains("-p 4222")).orElse(false))
        .findFirst();
    assertThat(server).as("the local nats-server on port 4222").isPresent();
    server.get().destroy();
    await("NATS stopped").atMost(Duration.ofSeconds(20)).until(() -> !PrivateNatsServer.answers(4222));
  }

  /** Starts the server exactly as the machine does, and waits until JetStream answers. */
  private static void startNats() throws IOException, InterruptedException {
    if (!PrivateNatsServer.answers(4222)) {
      Process start = new ProcessBuilder(START).inheritIO().start();
      start.waitFor();
    }
    await("NATS JetStream back").atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
        .ignoreExceptions().until(() -> {
          try (Connection c = NatsTestServer.connect()) {
            return c.getStatus() == Connection.Status.CONNECTED;
          }
        });
  }
}
