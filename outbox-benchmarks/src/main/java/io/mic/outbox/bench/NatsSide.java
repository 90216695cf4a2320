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
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** NATS JetStream: a file-backed stream of its own, the raw client with a window of outstanding PubAcks. */
final class NatsSide implements EndToEndBenchmark.Broker {
  private final Connection nats;
  private final JetStreamManagement jsm;
  private final int window;
  private final String stream = "BENCH_E2E_" + UUID.randomUUID().toString().substring(0, 8).toUpperCase();
  private final String subjectPrefix = stream.toLowerCase();

  NatsSide(String url, int window) throws Exception {
    this.window = window;
    this.nats = BenchSupport.nats(url, "mic-outbox-bench");
    this.jsm = nats.jetStreamManagement();
    jsm.addStream(StreamConfiguration.builder().name(stream).subjects(subjectPrefix + ".>").build());
  }

  @Override
  public String describe() {
    return "NATS JetStream " + nats.getServerInfo().getVersion() + " (file-backed stream, PubAck window " + window
        + "; one connection for both paths, with dontForceFlushOnRequest as the publisher's own connection)";
  }

  @Override
  public String raw() {
    return "raw NATS client, async, same messages and window (baseline)";
  }

  @Override
  public void publishRaw(List<OutboxEvent> events, String scenario) throws Exception {
    JetStream js = nats.jetStream();
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
  public EndToEndBenchmark.Publisher publisher() {
    NatsJetStreamPublisher p = NatsJetStreamPublisher.builder().connection(nats).subjectPrefix(subjectPrefix)
        .maxPendingAcks(window).build();
    return new EndToEndBenchmark.Publisher(p, p);
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
      nats.close();
    }
  }
}
