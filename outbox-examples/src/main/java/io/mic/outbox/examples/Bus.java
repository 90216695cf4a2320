package io.mic.outbox.examples;

import io.mic.outbox.DispatchFn;
import java.util.Map;
import java.util.function.Consumer;
import java.util.function.Predicate;

/** Where the demo publishes: the in-process bus, or NATS JetStream with {@code --nats}. */
interface Bus extends AutoCloseable {

  /** A message as a consumer sees it: topic, headers (with {@code x-event-id}) and payload. */
  record Message(String topic, Map<String, String> headers, String payload) {}

  String describe();

  /** What the dispatcher calls; returns once the bus has accepted the event. */
  DispatchFn publisher();

  void subscribe(String topic, Consumer<Message> subscriber);

  /** The first message that matches reaches the subscribers twice, as after a lost acknowledgement. */
  void redeliverOnce(Predicate<Message> which);

  @Override
  void close();
}
