package io.mic.outbox.bench;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamManagement;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

/**
 * NATS JetStream: a file-backed stream of its own; the raw client with a window of outstanding PubAcks on one
 * connection (the baseline) and on two, the events split between them; the library's publisher on
 * connections of its own, kept for the whole run as a service keeps it.
 */
final class NatsSide implements EndToEndBenchmark.Broker {
  private static final String TWO_CONNECTIONS =
      "raw NATS client, 2 connections, the same window on each, the events split between them";

  private final Connection nats;
  private final Connection second;
  private final JetStreamManagement jsm;
  private final int window;
  private final String stream = "BENCH_E2E_" + UUID.randomUUID().toString().substring(0, 8).toUpperCase();
  private final String subjectPrefix = stream.toLowerCase();
  private final String url;
  /** The publisher of each variant, by the name's ending; built on first use, kept for the run. */
  private final Map<String, NatsJetStreamPublisher> publishers = new LinkedHashMap<>();
  private final Map<String, Integer> connectionCounts = new LinkedHashMap<>();
  private final ExecutorService secondHalf = Executors.newSingleThreadExecutor();

  /**
   * @param connections the publisher's connection counts to compare ({@code --connections 2,1}), or
   *     {@code null}: its default only
   */
  NatsSide(String url, int window, String connections) throws Exception {
    this.url = url;
    this.window = window;
    if (connections != null) {
      for (String c : connections.split(",")) {
        int n = c.trim().matches("\\d{1,2}") ? Integer.parseInt(c.trim()) : 0;
        if (n < 1 || n > NatsJetStreamPublisher.MAX_CONNECTIONS) {
          throw new IllegalArgumentException("--connections must be counts from 1 to "
              + NatsJetStreamPublisher.MAX_CONNECTIONS + " separated by commas, e.g. 1,2; was " + connections);
        }
        connectionCounts.put(", " + n + (n == 1 ? " connection" : " connections"), n);
      }
    } else {
      connectionCounts.put("", NatsJetStreamPublisher.DEFAULT_CONNECTIONS);
    }
    this.nats = BenchSupport.nats(url, "mic-outbox-bench");
    this.second = BenchSupport.nats(url, "mic-outbox-bench-2");
    this.jsm = nats.jetStreamManagement();
    jsm.addStream(StreamConfiguration.builder().name(stream).subjects(subjectPrefix + ".>").build());
  }

  @Override
  public String describe() {
    return "NATS JetStream " + nats.getServerInfo().getVersion() + " (file-backed stream, PubAck window " + window
        + " per connection; every connection with dontForceFlushOnRequest; the publisher's connections opened as"
        + " batches first overlap, " + NatsJetStreamPublisher.DEFAULT_CONNECTIONS + " at most unless the scenario"
        + " says otherwise)";
  }

  @Override
  public String raw() {
    return "raw NATS client, async, same messages and window (baseline)";
  }

  @Override
  public List<String> extraRaw() {
    return List.of(TWO_CONNECTIONS);
  }

  @Override
  public void publishRaw(List<OutboxEvent> events, String scenario) throws Exception {
    if (!scenario.equals(TWO_CONNECTIONS)) {
      publishRaw(nats, events);
      return;
    }
    int half = events.size() / 2;
    Future<?> other = secondHalf.submit(() -> {
      publishRaw(second, events.subList(half, events.size()));
      return null;
    });
    publishRaw(nats, events.subList(0, half));
    other.get(30, TimeUnit.SECONDS);
  }

  private void publishRaw(Connection connection, List<OutboxEvent> events) throws Exception {
    JetStream js = connection.jetStream();
    ArrayDeque<CompletableFuture<PublishAck>> inFlight = new ArrayDeque<>();
    for (OutboxEvent e : events) {
      if (inFlight.size() >= window) {
        inFlight.poll().get(10, TimeUnit.SECONDS);
      }
      Headers headers = new Headers();
      OutboxHeaders.of(e).forEach(headers::put);
      headers.put("Nats-Msg-Id", e.id().toString());
      inFlight.add(js.publishAsync(subjectPrefix + "." + e.topic(), headers,
          e.payload().getBytes(StandardCharsets.UTF_8)));
    }
    for (CompletableFuture<PublishAck> ack : inFlight) {
      ack.get(10, TimeUnit.SECONDS);
    }
  }

  @Override
  public List<String> variants() {
    return List.copyOf(connectionCounts.keySet());
  }

  @Override
  public EndToEndBenchmark.Publisher publisher() {
    return publisher(variants().get(0));
  }

  @Override
  public EndToEndBenchmark.Publisher publisher(String variant) {
    NatsJetStreamPublisher p = publishers.computeIfAbsent(variant, v -> NatsJetStreamPublisher.builder().url(url)
        .connectionName("mic-outbox-bench-publisher").connections(connectionCounts.get(v))
        .subjectPrefix(subjectPrefix).maxPendingAcks(window).build());
    return new EndToEndBenchmark.Publisher(p, () -> {}); // closed with the run, as a service keeps its publisher
  }

  @Override
  public void checkAndReset(int expected) throws Exception {
    long stored = jsm.getStreamInfo(stream).getStreamState().getMsgCount();
    if (stored != expected) {
      throw new IllegalStateException("the stream holds " + stored + " messages, expected " + expected);
    }
    jsm.purgeStream(stream);
  }

  @Override
  public void close() throws Exception {
    try {
      jsm.deleteStream(stream);
    } finally {
      publishers.values().forEach(NatsJetStreamPublisher::close);
      secondHalf.shutdown();
      second.close();
      nats.close();
    }
  }
}
