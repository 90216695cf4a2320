package io.mic.outbox;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * An {@link AsyncOutboxDispatcher} subscribes to its store's appends at start, is woken up by them long
 * before its poll interval, and closes the subscription at close. Stores that cannot tell offer none.
 */
class AppendSubscriptionTest {

  @Test
  void theDispatcherSubscribesAtStartWakesUpOnAnAppendAndUnsubscribesAtClose() {
    InMemoryOutboxStore memory = new InMemoryOutboxStore();
    AtomicReference<Runnable> wakeUp = new AtomicReference<>();
    AtomicBoolean closed = new AtomicBoolean();
    AtomicInteger polls = new AtomicInteger();
    OutboxStore store = (OutboxStore) Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {OutboxStore.class}, (proxy, method, args) -> {
          if (method.getName().equals("subscribeToAppends")) {
            wakeUp.set((Runnable) args[0]);
            return Optional.of((OutboxStore.Subscription) () -> closed.set(true));
          }
          try {
            return method.invoke(memory, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          } finally {
            if (method.getName().equals("fetchPending")) {
              polls.incrementAndGet();
            }
          }
        });
    Set<UUID> published = ConcurrentHashMap.newKeySet();
    AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store)
        .pollInterval(Duration.ofMinutes(5)).dispatchFn(e -> published.add(e.id())).build();
    assertThat(wakeUp.get()).isNull();
    dispatcher.start();
    assertThat(wakeUp.get()).isNotNull();
    await().atMost(Duration.ofSeconds(10)).until(() -> polls.get() == 1); // the poll at start, done

    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
    memory.append(e); // as another process would: nobody calls dispatcher.wakeUp()
    wakeUp.get().run(); // what the store does when it hears of the commit
    await().atMost(Duration.ofSeconds(10)).until(() -> published.contains(e.id()));
    assertThat(polls).hasValue(2);

    assertThat(closed).isFalse();
    dispatcher.close();
    assertThat(closed).isTrue();
  }

  @Test
  void aStoreThatCannotTellOffersNoSubscription() {
    assertThat(new InMemoryOutboxStore().subscribeToAppends(() -> { })).isEmpty();
  }
}
