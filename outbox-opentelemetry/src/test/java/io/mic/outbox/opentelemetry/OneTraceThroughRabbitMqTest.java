package io.mic.outbox.opentelemetry;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.fail;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.GetResponse;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.trace.data.SpanData;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * One trace from the request that appends an event, through the asynchronous dispatcher and a real RabbitMQ
 * publication with confirms, to the consumer span started from the delivered message's AMQP headers, read
 * as docs/opentelemetry.md shows.
 */
class OneTraceThroughRabbitMqTest {
  private final TracingSdk sdk = new TracingSdk();
  private final String uri = System.getenv().getOrDefault("MIC_TEST_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672");
  private final String exchange = "otel-" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private final String queue = exchange + "-q";
  private Connection rabbit;
  private Channel channel;

  @BeforeEach
  void declare() throws Exception {
    try {
      ConnectionFactory factory = new ConnectionFactory();
      factory.setUri(uri);
      factory.setConnectionTimeout(2_000);
      rabbit = factory.newConnection();
    } catch (Exception e) {
      String message = "RabbitMQ is not reachable (" + e.getClass().getSimpleName() + "): start it or set"
          + " MIC_TEST_RABBITMQ_URI";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        fail(message);
      }
      Assumptions.abort(message);
    }
    channel = rabbit.createChannel();
    channel.exchangeDeclare(exchange, "topic", false, true, null);
    channel.queueDeclare(queue, false, false, false, null);
    channel.queueBind(queue, exchange, "order.#");
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (rabbit != null) {
      try {
        channel.queueDelete(queue);
        channel.exchangeDelete(exchange);
      } finally {
        rabbit.close();
      }
    }
    sdk.close();
  }

  @Test
  void requestPublishAndConsumerShareOneTrace() throws Exception {
    InMemoryOutboxStore store = new InMemoryOutboxStore();
    Span request = sdk.openTelemetry.getTracer("app").spanBuilder("POST /orders/7")
        .setSpanKind(SpanKind.SERVER).startSpan();
    OutboxEvent event;
    try (Scope ignored = request.makeCurrent()) {
      event = OutboxTracing.withCurrentTrace(OutboxEvent.builder().aggregate("order", "7")
          .topic("order.created").payload("{\"orderId\":7}").build());
      store.append(event);
    } finally {
      request.end();
    }

    OutboxTracing tracing = OutboxTracing.builder(sdk.openTelemetry).messagingSystem("rabbitmq").build();
    try (RabbitMqPublisher publisher = RabbitMqPublisher.builder().uri(uri).exchange(exchange).build();
        AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(store)
            .dispatchFn(tracing.wrap(publisher)).useClaim(true).pollInterval(Duration.ofMillis(20)).build()) {
      dispatcher.start();
      await().atMost(Duration.ofSeconds(10))
          .until(() -> store.find(event.id()).orElseThrow().status() == OutboxStatus.DISPATCHED);
    }

    List<GetResponse> deliveries = new ArrayList<>();
    await().atMost(Duration.ofSeconds(10)).until(() -> {
      GetResponse r = channel.basicGet(queue, true);
      if (r != null) {
        deliveries.add(r);
      }
      return deliveries.size() == 1;
    });
    GetResponse delivery = deliveries.get(0);
    Map<String, Object> headers = delivery.getProps().getHeaders();
    Span process = tracing.startProcessSpan(delivery.getEnvelope().getRoutingKey(),
        name -> Objects.toString(headers.get(name), null));  // AMQP long strings: toString is their text
    process.end();

    String id = event.id().toString();
    SpanData requestSpan = sdk.span("POST /orders/7");
    SpanData publish = sdk.span("publish order.created");
    SpanData consume = sdk.span("process order.created");
    assertThat(publish.getKind()).isEqualTo(SpanKind.PRODUCER);
    assertThat(consume.getKind()).isEqualTo(SpanKind.CONSUMER);
    assertThat(publish.getTraceId()).isEqualTo(requestSpan.getTraceId());
    assertThat(consume.getTraceId()).isEqualTo(requestSpan.getTraceId());
    assertThat(publish.getParentSpanId()).isEqualTo(requestSpan.getSpanId());
    assertThat(consume.getParentSpanId()).isEqualTo(publish.getSpanId());
    assertThat(consume.getParentSpanContext().isRemote()).isTrue();
    assertThat(consume.getAttributes().get(MessagingAttributes.MESSAGE_ID)).isEqualTo(id);
    assertThat(consume.getAttributes().get(MessagingAttributes.SYSTEM)).isEqualTo("rabbitmq");
    assertThat(sdk.spans()).hasSize(3);
  }
}
