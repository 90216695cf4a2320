package io.mic.outbox.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.DispatchResult;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.BrokerProbe;
import io.mic.outbox.spi.ChannelDispatchFn;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class OutboxTracingTest {
  private static final String CALLER_TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

  private final TracingSdk sdk = new TracingSdk();
  private final OutboxTracing tracing = OutboxTracing.builder(sdk.openTelemetry).messagingSystem("nats").build();
  private final InMemoryOutboxStore store = new InMemoryOutboxStore();
  private final List<OutboxEvent> sent = new CopyOnWriteArrayList<>();

  @AfterEach
  void closeSdk() {
    sdk.close();
  }

  private static OutboxEvent event(String aggregateId) {
    return OutboxEvent.builder().aggregate("order", aggregateId).topic("order.created")
        .payload("{\"id\":" + aggregateId + "}").build();
  }

  @Test
  void appendingInsideASpanCapturesItsContextAndKeepsOneTheCallerSet() {
    Span request = sdk.openTelemetry.getTracer("test").spanBuilder("request").startSpan();
    OutboxEvent captured;
    OutboxEvent own;
    try (Scope ignored = request.makeCurrent()) {
      captured = OutboxTracing.withCurrentTrace(event("1"));
      own = OutboxTracing.withCurrentTrace(OutboxEvent.builder().aggregate("order", "2").topic("order.created")
          .payload("{}").traceParent(CALLER_TRACE).build());
    } finally {
      request.end();
    }
    SpanContext ctx = request.getSpanContext();
    assertThat(captured.traceParent())
        .isEqualTo("00-" + ctx.getTraceId() + "-" + ctx.getSpanId() + "-" + ctx.getTraceFlags().asHex());
    assertThat(ctx.isSampled()).isTrue();
    assertThat(own.traceParent()).isEqualTo(CALLER_TRACE);

    OutboxEvent outside = event("3");
    assertThat(OutboxTracing.withCurrentTrace(outside)).isSameAs(outside);
    assertThat(outside.traceParent()).isNull();
  }

  @Test
  void aPlainPublisherGetsOneProducerSpanPerEventWhoseTraceparentItSends() {
    OutboxEvent appended = OutboxEvent.builder().aggregate("order", "7").topic("order.created").payload("{}")
        .traceParent(CALLER_TRACE).build();
    store.append(appended);
    DispatchFn wrapped = tracing.wrap(sent::add);
    assertThat(wrapped).isNotInstanceOf(BatchDispatchFn.class);

    DispatchResult result = OutboxDispatcher.builder().store(store).dispatchFn(wrapped).build().dispatchOnce();

    assertThat(result.dispatched()).isEqualTo(1);
    SpanData producer = sdk.span("publish order.created");
    assertThat(producer.getKind()).isEqualTo(SpanKind.PRODUCER);
    assertThat(producer.getTraceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
    assertThat(producer.getParentSpanId()).isEqualTo("00f067aa0ba902b7");
    assertThat(producer.getParentSpanContext().isRemote()).isTrue();
    assertThat(producer.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    assertThat(producer.getAttributes().asMap()).isEqualTo(Attributes.builder()
        .put("messaging.system", "nats")
        .put("messaging.destination.name", "order.created")
        .put("messaging.message.id", appended.id().toString())
        .put("messaging.operation.name", "publish")
        .put("messaging.operation.type", "send")
        .build().asMap());
    assertThat(sent).hasSize(1);
    assertThat(sent.get(0).id()).isEqualTo(appended.id());
    assertThat(sent.get(0).traceParent())
        .isEqualTo("00-4bf92f3577b34da6a3ce929d0e0e4736-" + producer.getSpanId() + "-"
            + producer.getSpanContext().getTraceFlags().asHex());
    assertThat(store.find(appended.id()).orElseThrow().traceParent()).isEqualTo(CALLER_TRACE);
  }

  /**
   * The destination function fails for one event of a batch (no subject for it): that event fails alone,
   * the rest of the batch is published, and every span that was started ends.
   */
  @Test
  void aDestinationThatFailsForOneEventFailsThatEventAloneInABatch() {
    OutboxEvent good = event("1");
    OutboxEvent bad = event("2");
    store.append(List.of(good, bad));
    OutboxTracing failing = OutboxTracing.builder(sdk.openTelemetry).messagingSystem("nats").destination(e -> {
      if (e.id().equals(bad.id())) {
        throw new IllegalArgumentException("no subject for this event");
      }
      return e.topic();
    }).build();
    BatchDispatchFn publisher = batchPublisher(events -> Map.of());

    DispatchResult result = OutboxDispatcher.builder().store(store).dispatchFn(failing.wrap(publisher)).build()
        .dispatchOnce();

    assertThat(result.dispatched()).isEqualTo(1);
    assertThat(result.retried()).isEqualTo(1);
    assertThat(sent).extracting(OutboxEvent::id).containsExactly(good.id());
    assertThat(store.find(bad.id()).orElseThrow().lastError()).contains("no subject for this event");
    assertThat(sdk.spans()).extracting(s -> s.getAttributes().get(MessagingAttributes.MESSAGE_ID))
        .containsExactly(good.id().toString());
  }

  @Test
  void aBatchPublisherStaysABatchPublisherAndEachFailureMarksItsOwnSpan() {
    OutboxEvent good = event("1");
    OutboxEvent bad = event("2");
    store.append(List.of(good, bad));
    List<Integer> batchSizes = new CopyOnWriteArrayList<>();
    BatchDispatchFn publisher = batchPublisher(events -> {
      batchSizes.add(events.size());
      Map<UUID, Exception> failures = new HashMap<>();
      failures.put(bad.id(), new IllegalStateException("refused by the broker"));
      return failures;
    });
    DispatchFn wrapped = tracing.wrap(publisher);
    assertThat(wrapped).isInstanceOf(BatchDispatchFn.class);

    DispatchResult result = OutboxDispatcher.builder().store(store).dispatchFn(wrapped).build().dispatchOnce();

    assertThat(result.dispatched()).isEqualTo(1);
    assertThat(result.retried()).isEqualTo(1);
    assertThat(batchSizes).containsExactly(2);
    Map<String, SpanData> byId = new HashMap<>();
    sdk.spans().forEach(s -> byId.put(s.getAttributes().get(MessagingAttributes.MESSAGE_ID), s));
    assertThat(byId).containsOnlyKeys(good.id().toString(), bad.id().toString());
    SpanData ok = byId.get(good.id().toString());
    SpanData failed = byId.get(bad.id().toString());
    assertThat(ok.getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    assertThat(ok.getParentSpanContext().isValid()).isFalse(); // appended outside any span: a new trace
    assertThat(failed.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(failed.getAttributes().get(MessagingAttributes.ERROR_TYPE))
        .isEqualTo("java.lang.IllegalStateException");
    assertThat(failed.getEvents()).extracting(EventData::getName).containsExactly("exception");
    assertThat(sent).extracting(OutboxEvent::traceParent).containsExactlyInAnyOrder(
        OutboxTracing.traceParentOf(ok.getSpanContext()), OutboxTracing.traceParentOf(failed.getSpanContext()));
  }

  /**
   * The traced publisher forwards the wrapped publisher's channel, so a worker's batches still overlap: a batch's
   * spans are open while its outcomes are awaited, and end with them, each failure on its own span.
   */
  @Test
  void aBatchPublishersChannelStaysOverlappingAndItsSpansEndWithTheOutcomes() throws Exception {
    OutboxEvent good = event("1");
    OutboxEvent bad = event("2");
    List<List<OutboxEvent>> sentThroughChannel = new CopyOnWriteArrayList<>();
    ChannelDispatchFn publisher = new ChannelDispatchFn() {
      @Override
      public void dispatch(OutboxEvent event) {
        throw new AssertionError("a batch publisher must get batches");
      }

      @Override
      public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        throw new AssertionError("the worker publishes through the channel");
      }

      @Override
      public BatchChannel channel() {
        return new BatchChannel() {
          @Override
          public Sent send(List<OutboxEvent> events) {
            sentThroughChannel.add(events);
            return () -> Map.of(events.get(1).id(), new IllegalStateException("refused by the broker"));
          }

          @Override
          public boolean overlapping() {
            return true;
          }
        };
      }
    };
    ChannelDispatchFn wrapped = (ChannelDispatchFn) tracing.wrap(publisher);

    try (BatchChannel channel = wrapped.channel()) {
      assertThat(channel.overlapping()).isTrue();
      BatchChannel.Sent sent = channel.send(List.of(good, bad));
      assertThat(sentThroughChannel).hasSize(1);
      assertThat(sentThroughChannel.get(0)).extracting(OutboxEvent::id).containsExactly(good.id(), bad.id());
      assertThat(sdk.spans()).as("no span ends before its outcome").isEmpty();

      assertThat(sent.outcomes()).containsOnlyKeys(bad.id());
    }
    Map<String, SpanData> byId = new HashMap<>();
    sdk.spans().forEach(span -> byId.put(span.getAttributes().get(MessagingAttributes.MESSAGE_ID), span));
    assertThat(byId).containsOnlyKeys(good.id().toString(), bad.id().toString());
    assertThat(byId.get(good.id().toString()).getStatus().getStatusCode()).isEqualTo(StatusCode.UNSET);
    assertThat(byId.get(bad.id().toString()).getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(sentThroughChannel.get(0)).extracting(OutboxEvent::traceParent).containsExactly(
        OutboxTracing.traceParentOf(byId.get(good.id().toString()).getSpanContext()),
        OutboxTracing.traceParentOf(byId.get(bad.id().toString()).getSpanContext()));
  }

  @Test
  void anUnavailableBrokerEndsTheSpanInErrorAndTheEventIsReleased() {
    OutboxEvent appended = event("1");
    store.append(appended);
    DispatchFn down = e -> {
      throw new PublishUnavailableException("broker unreachable");
    };

    DispatchResult result = OutboxDispatcher.builder().store(store).dispatchFn(tracing.wrap(down)).build()
        .dispatchOnce();

    assertThat(result.released()).isEqualTo(1);
    assertThat(store.find(appended.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
    SpanData span = sdk.span("publish order.created");
    assertThat(span.getStatus().getStatusCode()).isEqualTo(StatusCode.ERROR);
    assertThat(span.getAttributes().get(MessagingAttributes.ERROR_TYPE))
        .isEqualTo("io.mic.outbox.PublishUnavailableException");
  }

  /** A publisher that can tell whether its broker is back: tracing it must not hide that from the dispatcher. */
  interface ProbedPublisher extends DispatchFn, BrokerProbe {}

  @Test
  void theTracedPublisherKeepsItsProbe() throws Exception {
    ProbedPublisher probed = new ProbedPublisher() {
      @Override public void dispatch(OutboxEvent event) {}
      @Override public boolean ready() {
        return true;
      }
    };

    assertThat(BrokerProbe.of(tracing.wrap(probed))).isSameAs(probed);
  }

  @Test
  void withoutATracerTheEventGoesOutAsStored() throws Exception {
    OutboxTracing noop = OutboxTracing.builder(OpenTelemetry.noop()).messagingSystem("nats").build();
    OutboxEvent appended = OutboxEvent.builder().aggregate("order", "7").topic("order.created").payload("{}")
        .traceParent(CALLER_TRACE).build();

    noop.wrap(sent::add).dispatch(appended);

    assertThat(sent).containsExactly(appended);
    assertThat(sent.get(0).traceParent()).isEqualTo(CALLER_TRACE);
  }

  @Test
  void theConsumerContinuesFromTheHeaderAndIgnoresAMalformedOne() {
    SpanContext remote = Span.fromContext(OutboxTracing.extract(Map.of("traceparent", CALLER_TRACE)))
        .getSpanContext();
    assertThat(remote.isRemote()).isTrue();
    assertThat(remote.getTraceId()).isEqualTo("4bf92f3577b34da6a3ce929d0e0e4736");
    assertThat(remote.getSpanId()).isEqualTo("00f067aa0ba902b7");

    assertThat(OutboxTracing.extract(Map.of("traceparent", "garbage"))).isSameAs(Context.root());
    assertThat(OutboxTracing.extract(Map.of())).isSameAs(Context.root());
  }

  @Test
  void theBuilderNamesWhatIsMissing() {
    assertThatThrownBy(() -> OutboxTracing.builder(sdk.openTelemetry).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("messagingSystem is required, was null: .messagingSystem(\"nats\"), \"rabbitmq\" or \"kafka\"");
    assertThatThrownBy(() -> OutboxTracing.builder(null).messagingSystem("nats").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageStartingWith("openTelemetry is required");
  }

  /** A batch publisher that records what it is sent in {@code sent} and answers with {@code outcome}. */
  private BatchDispatchFn batchPublisher(Function<List<OutboxEvent>, Map<UUID, Exception>> outcome) {
    return new BatchDispatchFn() {
      @Override
      public void dispatch(OutboxEvent event) {
        throw new AssertionError("a batch publisher must get batches");
      }

      @Override
      public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) {
        sent.addAll(events);
        return outcome.apply(events);
      }
    };
  }
}
