package io.mic.outbox.rabbitmq;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutgoingMessage;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.ReleaseReason;
import io.mic.outbox.SendOutcome;
import java.time.Duration;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Tests that stop the broker or change its settings with {@code rabbitmqctl}; each brings the broker back
 * as it was in {@code finally}. Never run in parallel with anything else.
 */
@Isolated
class BrokerControlTest {
  private final InMemoryOutboxStore store = new InMemoryOutboxStore();

  private static OutboxEvent event(String aggregateId, String payload) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.changed").payload(payload).build();
  }

  /** Declares a durable exchange and queue (they must survive the application's restart). */
  private static String declare(Channel ch) throws Exception {
    String exchange = TestRabbit.uniqueName();
    ch.exchangeDeclare(exchange, "topic", true);
    ch.queueDeclare(exchange + "-q", true, false, false, null);
    ch.queueBind(exchange + "-q", exchange, "order.#");
    return exchange;
  }

  /** A durable exchange and queue of their own, declared on a connection of their own. */
  private static String declareExchange() throws Exception {
    try (Connection c = TestRabbit.connect(); Channel ch = c.createChannel()) {
      return declare(ch);
    }
  }

  /** The broker's memory high watermark now, as rabbitmqctl prints it. */
  private static String watermark() throws Exception {
    return TestRabbit.rabbitmqctl("eval", "vm_memory_monitor:get_vm_memory_high_watermark().").strip();
  }

  private static void delete(String exchange) throws Exception {
    try (Connection c = TestRabbit.connect(); Channel ch = c.createChannel()) {
      ch.queueDelete(exchange + "-q");
      ch.exchangeDelete(exchange);
    }
  }

  private static Set<String> messageIds(String queue) throws Exception {
    Set<String> ids = new HashSet<>();
    try (Connection c = TestRabbit.connect(); Channel ch = c.createChannel()) {
      GetResponse r;
      while ((r = ch.basicGet(queue, true)) != null) {
        ids.add(r.getProps().getMessageId());
      }
    }
    return ids;
  }

  private static Set<String> idsOf(List<OutboxEvent> events) {
    Set<String> ids = new HashSet<>();
    events.forEach(e -> ids.add(e.id().toString()));
    return ids;
  }

  @Test
  void theBrokerStoppedAndStartedMidDrainLosesNothingBurnsNoAttemptAndDeadLettersNothing() throws Exception {
    TestRabbit.assumeControllable();
    String exchange = declareExchange();
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 40_000; i++) {
      events.add(event("agg-" + (i % 500), "{\"n\":" + i + "}"));
    }
    store.append(events);
    AtomicInteger released = new AtomicInteger();
    OutboxListener countReleases = new OutboxListener() {
      @Override
      public void onReleased(OutboxEvent event, ReleaseReason reason) {
        released.incrementAndGet();
      }
    };
    boolean stopped = false;
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
            .build();
        AsyncOutboxDispatcher async = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher)
            .useClaim(true).preserveAggregateOrder(true).workers(2).batchSize(100).maxAttempts(3)
            .pollInterval(Duration.ofMillis(50)).listener(countReleases).build()) {
      async.start();
      await().atMost(Duration.ofSeconds(30)).until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) > 0);
      try {
        TestRabbit.rabbitmqctl("stop_app");
        stopped = true;
        await().atMost(Duration.ofSeconds(30)).until(() -> released.get() > 0);
        assertThat(store.countByStatus().get(OutboxStatus.PENDING)).isPositive(); // the outage hit the drain
      } finally {
        if (stopped) {
          TestRabbit.rabbitmqctl("start_app");
        }
      }
      await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200))
          .until(() -> store.countByStatus().get(OutboxStatus.DISPATCHED) == events.size());
    }
    try {
      assertThat(store.countByStatus()).containsEntry(OutboxStatus.DLQ, 0L).containsEntry(OutboxStatus.PENDING, 0L);
      for (OutboxEvent e : events) {
        assertThat(store.find(e.id()).orElseThrow().attempts()).as("attempts of %s", e.id()).isEqualTo(1);
      }
      assertThat(messageIds(exchange + "-q")).isEqualTo(idsOf(events)); // duplicates allowed, losses not
    } finally {
      delete(exchange);
    }
  }

  @Test
  void aMessageOverTheBrokersSizeLimitIsRejectedAndPoisonsNeitherItsBatchNorTheNext() throws Exception {
    TestRabbit.assumeControllable();
    String exchange = declareExchange();
    long previous = maxMessageSize();
    TestRabbit.rabbitmqctl("eval", "application:set_env(rabbit, max_message_size, 4096).");
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
        .confirmWindow(4).build()) {
      List<OutboxEvent> events = new ArrayList<>();
      for (int i = 0; i < 20; i++) {
        events.add(event("agg-" + i, i == 7 ? "{\"big\":\"" + "x".repeat(8000) + "\"}" : "{\"n\":" + i + "}"));
      }
      store.append(events);
      OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher).batchSize(100)
          .build();

      DispatchResult result = dispatcher.dispatchOnce();

      assertThat(result.dispatched()).isEqualTo(19);
      assertThat(result.retried()).isEqualTo(1);
      assertThat(result.released()).isZero();
      OutboxEvent big = store.find(events.get(7).id()).orElseThrow();
      assertThat(big.status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(big.attempts()).isEqualTo(1);
      assertThat(big.lastError()).contains(PublishRejectedException.class.getName())
          .contains("RabbitMQ refused event " + big.id() + " to exchange '" + exchange + "' with routing key"
              + " 'order.changed': PRECONDITION_FAILED - message size 8010 is larger than configured max size 4096");

      List<OutboxEvent> next = List.of(event("n-1", "{}"), event("n-2", "{}"), event("n-3", "{}"));
      store.append(next);
      assertThat(dispatcher.dispatchOnce().dispatched()).isEqualTo(3);

      List<OutboxEvent> good = new ArrayList<>(events);
      good.remove(7);
      good.addAll(next);
      assertThat(messageIds(exchange + "-q")).isEqualTo(idsOf(good));
    } finally {
      TestRabbit.rabbitmqctl("eval", "application:set_env(rabbit, max_message_size, " + previous + ").");
      delete(exchange);
    }
    assertThat(maxMessageSize()).isEqualTo(previous);
  }

  @Test
  void aBlockedConnectionFailsFastAsUnavailableAndPublishesAgainOnceUnblocked() throws Exception {
    TestRabbit.assumeControllable();
    String exchange = declareExchange();
    String watermark = watermark();
    OutboxEvent before = event("1", "{\"n\":1}");
    OutboxEvent during = event("2", "{\"n\":2}");
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
        .confirmTimeout(Duration.ofSeconds(1)).build()) {
      publisher.dispatch(before);
      try {
        TestRabbit.rabbitmqctl("set_vm_memory_high_watermark", "0");
        // the broker blocks a connection when it next publishes: the first try may end as a confirm timeout
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
            assertThatThrownBy(() -> publisher.dispatch(during))
                .isInstanceOf(PublishUnavailableException.class)
                .hasMessageStartingWith("RabbitMQ blocks publishing (")
                .hasMessageContaining("the broker has a memory or disk alarm"));
      } finally {
        TestRabbit.rabbitmqctl("set_vm_memory_high_watermark", watermark);
      }
      await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() -> publisher.dispatch(during));
      assertThat(messageIds(exchange + "-q")).isEqualTo(idsOf(List.of(before, during)));
    } finally {
      delete(exchange);
    }
  }

  /**
   * A memory alarm blocks the connection in the middle of a batch, and the connection closes before the
   * messages it held were confirmed: those messages may never have reached a queue, so each must come back
   * as a failure (unavailable), never as published. Whether the fourth message goes out before the broker's
   * notice of the block comes in is a race; the third is held either way, unless the broker confirmed it
   * first, and then the scenario runs again, up to three times.
   */
  @Test
  void messagesHeldByABlockedConnectionThatClosesAreNotReportedAsPublished() throws Exception {
    TestRabbit.assumeControllable();
    boolean held = false;
    for (int attempt = 0; attempt < 3 && !held; attempt++) {
      held = blockMidBatchThenClose();
    }
    assertThat(held).as("messages held by the blocked connection, in three attempts").isTrue();
  }

  /**
   * Publishes a batch of 10 during which the broker blocks the connection (its third message meets a memory
   * alarm), then closes the connection while the batch waits for its confirms; every message has a failure or
   * is in the queue either way. Returns whether the batch waited for the confirms of messages the blocked
   * connection held (false: the broker confirmed all it read, and the batch failed the rest unsent). The steps
   * run as the publisher's one send path takes each message from the list, right before it sends it.
   */
  private boolean blockMidBatchThenClose() throws Exception {
    String exchange = declareExchange();
    String watermark = watermark();
    String name = TestRabbit.uniqueName();
    List<OutboxEvent> batch = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      batch.add(event("agg-" + i, "{\"n\":" + i + "}"));
    }
    // a message is asked for again for the text of a failure: each step happens on the first ask only
    AtomicBoolean alarmRaised = new AtomicBoolean();
    AtomicBoolean fourthTaken = new AtomicBoolean();
    AtomicBoolean closing = new AtomicBoolean(); // after the test closes the connection, no step waits on it
    AtomicReference<Thread> publishing = new AtomicReference<>();
    List<OutgoingMessage> messages = new AbstractList<>() {
      @Override
      public OutgoingMessage get(int index) {
        try {
          if (index == 2 && alarmRaised.compareAndSet(false, true)) {
            // the alarm goes off: the broker tells the connection, and stops reading it once it publishes
            publishing.set(Thread.currentThread());
            TestRabbit.rabbitmqctl("set_vm_memory_high_watermark", "0");
            awaitState(name, "blocking", "blocked"); // in force before this message goes
          } else if (index == 3 && !closing.get() && !settling() && fourthTaken.compareAndSet(false, true)) {
            awaitState(name, "blocked"); // the third message made the broker block the connection
          }
        } catch (Exception x) {
          throw new IllegalStateException(x);
        }
        return OutboxHeaders.messageOf(batch.get(index));
      }

      @Override
      public int size() {
        return batch.size();
      }
    };
    ExecutorService caller = Executors.newSingleThreadExecutor();
    boolean held;
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
        .connectionName(name).confirmTimeout(Duration.ofSeconds(60)).build()) {
      publisher.dispatch(event("warm-up", "{}")); // a publishing connection: the alarm's notice reaches it
      List<SendOutcome> outcomes;
      try {
        Future<List<SendOutcome>> result = caller.submit(() -> publisher.send(messages, false));
        awaitState(name, "blocked");
        // the publisher saw the block, sends nothing more, and waits for the confirms of what it sent (the
        // third message, or the fourth too when it went out before the broker's notice came in); or nothing
        // it sent is held, and the batch ends by itself
        try {
          await().atMost(Duration.ofSeconds(60)).until(() -> result.isDone() || awaitsConfirm(publishing.get()));
        } catch (ConditionTimeoutException e) {
          throw new AssertionError("the batch neither ended nor waits for a confirm; the sender is at:\n"
              + Arrays.stream(publishing.get().getStackTrace()).map(String::valueOf)
                  .collect(Collectors.joining("\n  ")), e);
        }
        held = !result.isDone();
        if (held) {
          closing.set(true);
          TestRabbit.rabbitmqctl("close_connection", connection(name)[0], "closed by the test");
        }
        outcomes = result.get(60, TimeUnit.SECONDS);
      } finally {
        caller.shutdownNow();
        assertThat(caller.awaitTermination(60, TimeUnit.SECONDS)).as("the batch ended").isTrue();
        TestRabbit.rabbitmqctl("set_vm_memory_high_watermark", watermark);
      }
      Set<String> queued = messageIds(exchange + "-q");
      for (int i = 0; i < batch.size(); i++) {
        SendOutcome outcome = outcomes.get(i);
        assertThat(outcome.failure() != null || queued.contains(batch.get(i).id().toString()))
            .as("message %d has no failure, so it must be in the queue", i).isTrue();
        if (outcome.failure() != null) {
          assertThat(outcome.failure()).isInstanceOf(PublishUnavailableException.class);
        }
      }
    } finally {
      delete(exchange);
    }
    assertThat(watermark()).isEqualTo(watermark);
    return held;
  }

  /**
   * Closing the publisher while an alarm blocks its connection: the broker reads nothing from it, so no
   * close-ok ever comes back. close() must still return promptly (an application's shutdown waits on it),
   * not wait for each pooled channel in turn.
   */
  @Test
  void closeReturnsPromptlyWhileTheBrokerBlocksTheConnection() throws Exception {
    TestRabbit.assumeControllable();
    String exchange = declareExchange();
    String watermark = watermark();
    String name = TestRabbit.uniqueName();
    RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(TestRabbit.uri()).exchange(exchange)
        .connectionName(name).confirmTimeout(Duration.ofSeconds(1)).build();
    ExecutorService callers = Executors.newFixedThreadPool(3);
    try {
      // three batches at once: three channels, kept in the pool afterwards
      CountDownLatch together = new CountDownLatch(3);
      List<Future<Map<UUID, Exception>>> batches = new ArrayList<>();
      for (int i = 0; i < 3; i++) {
        List<OutboxEvent> batch = List.of(event("c-" + i, "{}"));
        batches.add(callers.submit(() -> {
          together.countDown();
          together.await(10, TimeUnit.SECONDS);
          return publisher.dispatchBatch(batch);
        }));
      }
      for (Future<Map<UUID, Exception>> b : batches) {
        assertThat(b.get(30, TimeUnit.SECONDS)).isEmpty();
      }
      TestRabbit.rabbitmqctl("set_vm_memory_high_watermark", "0");
      awaitState(name, "blocking", "blocked");
      assertThat(publisher.dispatchBatch(List.of(event("blocked", "{}")))).hasSize(1); // it blocks the connection
      awaitState(name, "blocked");

      Future<?> closing = callers.submit(publisher::close);
      assertThatCode(() -> closing.get(8, TimeUnit.SECONDS)).as("close() returned within 8 s")
          .doesNotThrowAnyException();
    } finally {
      TestRabbit.rabbitmqctl("set_vm_memory_high_watermark", watermark); // first: a close that waits ends
      callers.shutdownNow();
      assertThat(callers.awaitTermination(60, TimeUnit.SECONDS)).isTrue();
      publisher.close();
      delete(exchange);
    }
    assertThat(watermark()).isEqualTo(watermark);
  }

  /** Waits until the broker lists the connection named {@code name} in one of {@code states}. */
  /**
   * Whether the sender asks for a message to settle the batch (the text of a failure), not to send it: the
   * sender saw the block before this message, which stays unsent.
   */
  private static boolean settling() {
    return Arrays.stream(Thread.currentThread().getStackTrace())
        .anyMatch(f -> f.getClassName().endsWith("RabbitSender$Round") && f.getMethodName().equals("settle"));
  }

  /**
   * Whether {@code thread} waits for a confirm, judged from one snapshot of its stack: in the sender's wait and
   * not in a step of this test (a step's own waits look alike from outside).
   */
  private static boolean awaitsConfirm(Thread thread) {
    StackTraceElement[] stack = thread.getStackTrace();
    boolean inStep = Arrays.stream(stack).anyMatch(f -> f.getMethodName().equals("get")
        && f.getClassName().startsWith(BrokerControlTest.class.getName() + "$")); // the list's get()
    boolean awaiting = Arrays.stream(stack)
        .anyMatch(f -> f.getClassName().endsWith("ConfirmChannel$Pending") && f.getMethodName().equals("await"));
    return awaiting && !inStep;
  }

  private static void awaitState(String name, String... states) {
    await().atMost(Duration.ofSeconds(30)).until(() -> List.of(states).contains(connection(name)[1]));
  }

  /** The broker's pid and state of the connection the client named {@code name}; empty strings when none. */
  private static String[] connection(String name) throws Exception {
    for (String line : TestRabbit.rabbitmqctl("-q", "list_connections", "pid", "state", "client_properties")
        .split("\n")) {
      if (line.contains("\"" + name + "\"")) {
        String[] columns = line.split("\t");
        return new String[] {columns[0], columns[1]};
      }
    }
    return new String[] {"", ""};
  }

  private static long maxMessageSize() throws Exception {
    String out = TestRabbit.rabbitmqctl("eval", "application:get_env(rabbit, max_message_size).");
    Matcher m = Pattern.compile("\\{ok,(\\d+)}").matcher(out);
    assertThat(m.find()).as("max_message_size in %s", out).isTrue();
    return Long.parseLong(m.group(1));
  }
}
