package io.mic.outbox.examples;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.Connection;
import io.nats.client.Dispatcher;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The demo on NATS JetStream: a stream of its own (deleted at the end), the library's publisher, and a
 * push consumer that acknowledges each message after the subscribers ran. {@link #redeliverOnce} makes it
 * NAK one message after processing it, so JetStream really delivers it again.
 */
final class NatsBus implements Bus {
  private static final String PREFIX = "mic-demo";

  private final Connection connection;
  private final JetStreamManagement management;
  private final JetStream jetStream;
  private final String stream = "MIC_DEMO_" + UUID.randomUUID().toString().substring(0, 8).toUpperCase();
  private final NatsJetStreamPublisher publisher;
  private final Dispatcher dispatcher;
  
  private final AtomicReference<Predicate<Bus.Message>> redeliver = new AtomicReference<>();


  NatsBus(String url) {
    try {
      connection = Nats.connect(new Options.Builder().server(url).connectionTimeout(Duration.ofSeconds(3))
          .dontForceFlushOnRequest() // the publisher shares it: a batch's messages share writes
          .errorListener(new io.nats.client.ErrorListener() {}).build()); // errors reach the user as exit code 2
      management = connection.jetStreamManagement();
      management.addStream(StreamConfiguration.builder().name(stream).subjects(PREFIX + ".>")
          .storageType(StorageType.Memory).build());
      jetStream = connection.jetStream();
    } catch (Exception e) {
      // the client's message quotes the URL with its password
      String message = e.getMessage() == null ? e.toString() : e.getMessage().replace(url, Secrets.redact(url));
      throw new OutboxDemo.DemoSetupException("cannot use NATS JetStream at " + Secrets.redact(url) + " ("
          + new Secrets(url).mask(message) + "): start nats-server with -js, or leave out --nats");
    }
    publisher = NatsJetStreamPublisher.builder().connection(connection).subjectPrefix(PREFIX).build();
    dispatcher = connection.createDispatcher();
  }

  @Override
  public String describe() {
    return "NATS JetStream (stream " + stream + ")";
  }

  @Override
  public DispatchFn publisher() {
    return publisher;
  }

  @Override
  public void subscribe(String topic, Consumer<Bus.Message> subscriber) {
    try {
      jetStream.subscribe(PREFIX + "." + topic, dispatcher, raw -> deliver(topic, raw, subscriber), false,
          PushSubscribeOptions.builder().stream(stream).build());
    } catch (Exception e) {
      throw new IllegalStateException("cannot subscribe to " + topic + ": " + e.getMessage(), e);
    }
  }

  private void deliver(String topic, io.nats.client.Message raw, Consumer<Bus.Message> subscriber) {
    Map<String, String> headers = new LinkedHashMap<>();
    Headers h = raw.getHeaders();
    if (h != null) {
      for (String key : h.keySet()) {
        headers.put(key, h.getFirst(key));
      }
    }
    Bus.Message message = new Bus.Message(topic, Map.copyOf(headers),
        new String(raw.getData(), java.nio.charset.StandardCharsets.UTF_8));
    subscriber.accept(message);
    Predicate<Bus.Message> which = redeliver.get();
    if (which != null && which.test(message) && redeliver.compareAndSet(which, null)) {
      raw.nak(); // as if the consumer died before acknowledging: JetStream delivers the message again
    } else {
      raw.ack();
    }
  }

  @Override
  public void redeliverOnce(Predicate<Bus.Message> which) {
    redeliver.set(which);
  }

  @Override
  public void close() {
    try {
      connection.closeDispatcher(dispatcher);
      management.deleteStream(stream);
      connection.close();
    } catch (Exception e) {
      // the stream is in memory and goes with the server; nothing is left on disk
    }
  }
}
