package io.mic.outbox.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.fail;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.StreamConfiguration;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One trace from the request that appends an event, through the asynchronous dispatcher and a real
 * JetStream publication, to the consumer span started from the received message's headers.
 */
class OneTraceThroughNatsTest {
  private final TracingSdk sdk = new TracingSdk();
  private final String stream = "otel" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private Connection nats;

  @BeforeEach
  void connect() throws Exception {
    String url = System.getenv().getOrDefault("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");
    try {
      nats = Nats.connect(Options.builder().server(url).connectionTimeout(Duration.ofSeconds(2)).build());
      nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(stream + ".>")
          .build());
    } catch (IOException | JetStreamApiException e) {
      String message = "NATS JetStream is not reachable at " + url + " (" + e + "): start 'nats-server -js'"
          + " or set MIC_TEST_NATS_URL";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        fail(message);
      }
      Assumptions.abort(message);
    }
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (nats != null) {
      try {
        nats.jetStreamManagement().deleteStream(stream);
      } finally {
        nats.close();
      }
    }
    sdk.close();
  }

  @Test
  void requestPublishAndConsumerShareOneTracePerEvent() throws Exception {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    String topic = stream + ".order.created";
    Map<String, Span> requests = new HashMap<>();
    Map<String, OutboxEvent> events = new HashMap<>();
    for (String order : List.of("41", "42")) {  // two requests, two traces
      Span request = sdk.openTelemetry.getTracer("app").spanBuilder("POST /orders/" + order)
          .setSpanKind(SpanKind.SERVER).startSpan();
      try (Scope ignored = request.makeCurrent()) {
        OutboxEvent event = OutboxTracing.withCurrentTrace(OutboxEvent.builder().aggregate("order", order)
            .topic(topic).payload("{\"orderId\":" + order + "}").build());
        store.append(event);
        events.put(order, event);
      } finally {
        request.end();
      }
      requests.put(order, request);
    }

    OutboxTracing tracing = OutboxTracing.builder(sdk.openTelemetry).messagingSystem("nats").build();
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).build()) {
      DispatchFn traced = tracing.wrap(publisher);
      assertThat(traced).isInstanceOf(BatchDispatchFn.class);
      try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(traced)
          .useClaim(true).pollInterval(Duration.ofMillis(20)).build()) {
        dispatcher.start();
        await().atMost(Duration.ofSeconds(10)).until(() -> events.values().stream()
            .allMatch(e -> store.find(e.id()).orElseThrow().status() == OutboxStatus.DISPATCHED));
      }
    }

    for (Message message : receive(2)) {  // the consumer
      Span process = tracing.startProcessSpan(message.getSubject(), message.getHeaders()::getFirst);
      process.end();
    }

    for (String order : List.of("41", "42")) {
      OutboxEvent event = events.get(order);
      String id = event.id().toString();
      SpanData request = sdk.span("POST /orders/" + order);
      SpanData publish = only(sdk.spans(), SpanKind.PRODUCER, id);
      SpanData process = only(sdk.spans(), SpanKind.CONSUMER, id);

      assertThat(event.traceParent()).isEqualTo(OutboxTracing.traceParentOf(requests.get(order).getSpanContext()));
      assertThat(publish.getTraceId()).isEqualTo(request.getTraceId());
      assertThat(process.getTraceId()).isEqualTo(request.getTraceId());
      assertThat(publish.getParentSpanId()).isEqualTo(request.getSpanId());
      assertThat(process.getParentSpanId()).isEqualTo(publish.getSpanId());
      assertThat(process.getParentSpanContext().isRemote()).isTrue();

      assertThat(publish.getName()).isEqualTo("publish " + topic);
      assertThat(publish.getAttributes().asMap()).isEqualTo(Attributes.builder()
          .put("messaging.system", "nats")
          .put("messaging.destination.name", topic)
          .put("messaging.message.id", id)
          .put("messaging.operation.name", "publish")
          .put("messaging.operation.type", "send")
          .build().asMap());
      assertThat(process.getName()).isEqualTo("process " + topic);
      assertThat(process.getAttributes().asMap()).isEqualTo(Attributes.builder()
          .put("messaging.system", "nats")
          .put("messaging.destination.name", topic)
          .put("messaging.message.id", id)
          .put("messaging.operation.name", "process")
          .put("messaging.operation.type", "process")
          .build().asMap());
    }
    assertThat(sdk.spans()).hasSize(6);
    assertThat(sdk.spans().stream().map(SpanData::getTraceId).distinct()).hasSize(2);
  }

  private static SpanData only(List<SpanData> spans, SpanKind kind, String messageId) {
    List<SpanData> found = spans.stream().filter(s -> s.getKind() == kind
        && messageId.equals(s.getAttributes().get(MessagingAttributes.MESSAGE_ID))).toList();
    assertThat(found).as("%s spans of message %s", kind, messageId).hasSize(1);
    return found.get(0);
  }

  private List<Message> receive(int count) throws Exception {
    JetStreamSubscription sub = nats.jetStream().subscribe(stream + ".>",
        PullSubscribeOptions.builder().stream(stream).build());
    List<Message> messages = new ArrayList<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (messages.size() < count && System.nanoTime() < deadline) {
      for (Message m : sub.fetch(count - messages.size(), Duration.ofSeconds(1))) {
        m.ack();
        messages.add(m);
      }
    }
    sub.unsubscribe();
    assertThat(messages).hasSize(count);
    return messages;
  }
}
