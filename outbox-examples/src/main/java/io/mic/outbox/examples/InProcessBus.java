package io.mic.outbox.examples;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * A stand-in for a broker, in the same JVM: publishing hands the message to every subscriber of its topic
 * before returning, which is what a broker's acknowledgement means. Like a real broker it may deliver a
 * message twice; {@link #redeliverOnce} makes that happen on purpose.
 */
final class InProcessBus implements Bus, DispatchFn {

  private final Map<String, List<Consumer<Message>>> subscribers = new LinkedHashMap<>();
  private final java.util.concurrent.atomic.AtomicReference<java.util.function.Predicate<Message>> redeliver =
      new java.util.concurrent.atomic.AtomicReference<>();

  @Override
  public String describe() {
    return "an in-process bus";
  }

  @Override
  public DispatchFn publisher() {
    return this;
  }

  @Override
  public void close() {}

  @Override
  public synchronized void subscribe(String topic, Consumer<Message> subscriber) {
    subscribers.computeIfAbsent(topic, t -> new CopyOnWriteArrayList<>()).add(subscriber);
  }

  /** The first message that matches is delivered twice, as a broker does after a lost acknowledgement. */
  @Override
  public void redeliverOnce(java.util.function.Predicate<Message> which) {
    redeliver.set(which);
  }

  @Override
  public void dispatch(OutboxEvent event) {
    Map<String, String> headers = new LinkedHashMap<>(event.headers());
    headers.put("x-event-id", event.id().toString());
    headers.put("x-aggregate-type", event.aggregateType());
    headers.put("x-aggregate-id", event.aggregateId());
    Message message = new Message(event.topic(), Map.copyOf(headers), event.payload());
    List<Consumer<Message>> targets;
    synchronized (this) {
      targets = subscribers.getOrDefault(event.topic(), List.of());
    }
    java.util.function.Predicate<Message> which = redeliver.get();
    int deliveries = which != null && which.test(message) && redeliver.compareAndSet(which, null) ? 2 : 1;
    for (int i = 0; i < deliveries; i++) {
      for (Consumer<Message> subscriber : targets) {
        subscriber.accept(message); // a subscriber that throws fails the publication: the outbox retries
      }
    }
  }
}
