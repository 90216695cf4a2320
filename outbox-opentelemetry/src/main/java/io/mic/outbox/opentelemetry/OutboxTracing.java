package io.mic.outbox.opentelemetry;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.propagation.TextMapGetter;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;

/**
 * Carries an OpenTelemetry trace through the outbox: from the code that appends an event, through its
 * publication, to the consumer.
 *
 * <pre>{@code
 * // 1. at append, inside the request's span: the event remembers the span context as its traceparent
 * store.append(connection, OutboxTracing.withCurrentTrace(event));
 *
 * // 2. at publish: one PRODUCER span per event, child of the appending span
 * OutboxTracing tracing = OutboxTracing.builder(openTelemetry).messagingSystem("nats").build();
 * AsyncOutboxDispatcher.builder().store(store).dispatchFn(tracing.wrap(natsPublisher)) ...
 *
 * // 3. at the consumer: a CONSUMER span, child of the PRODUCER span
 * Span span = tracing.startProcessSpan(msg.getSubject(), msg.getHeaders()::getFirst);
 * }</pre>
 *
 * <p>The trace context travels as the W3C {@code traceparent} only (contract: the event's
 * {@link OutboxEvent#traceParent()}, sent as the {@value OutboxHeaders#TRACEPARENT} header); trace state
 * and baggage do not travel through the outbox.
 */
public final class OutboxTracing {

  /** The instrumentation scope of the spans this module starts. */
  public static final String INSTRUMENTATION_NAME = "io.mic.outbox.opentelemetry";

  static final TextMapGetter<Function<String, String>> HEADER_GETTER = new TextMapGetter<>() {
    @Override
    public Iterable<String> keys(Function<String, String> carrier) {
      return List.of(OutboxHeaders.TRACEPARENT);
    }

    @Override
    public String get(Function<String, String> carrier, String key) {
      return carrier == null ? null : carrier.apply(key);
    }
  };

  private final Tracer tracer;
  private final String messagingSystem;
  private final Function<OutboxEvent, String> destination;

  private OutboxTracing(Builder b) {
    this.tracer = b.openTelemetry.getTracer(INSTRUMENTATION_NAME);
    this.messagingSystem = b.messagingSystem;
    this.destination = b.destination;
  }

  /** Starts a builder; {@code openTelemetry} provides the tracer (e.g. {@code GlobalOpenTelemetry.get()}). */
  public static Builder builder(OpenTelemetry openTelemetry) {
    return new Builder(openTelemetry);
  }

  /**
   * The event with the current span's context as its traceparent, for appending inside a traced request.
   * An event that already has a traceparent, or code running outside any span, gets the event back
   * unchanged.
   */
  public static OutboxEvent withCurrentTrace(OutboxEvent event) {
    return withTrace(event, Context.current());
  }

  /** Like {@link #withCurrentTrace(OutboxEvent)}, with the span of {@code context}. */
  public static OutboxEvent withTrace(OutboxEvent event, Context context) {
    if (event.traceParent() != null) {
      return event;
    }
    String traceParent = traceParentOf(Span.fromContext(context).getSpanContext());
    return traceParent == null ? event : event.toStored().traceParent(traceParent).build();
  }

  /**
   * The W3C {@code traceparent} of a span context, e.g.
   * {@code 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01}; {@code null} for an invalid context.
   */
  public static String traceParentOf(SpanContext span) {
    if (!span.isValid()) {
      return null;
    }
    return "00-" + span.getTraceId() + "-" + span.getSpanId() + "-" + span.getTraceFlags().asHex();
  }

  /**
   * The context a consumer continues, read from the {@value OutboxHeaders#TRACEPARENT} header of a
   * received message; the root context when the header is absent or malformed.
   *
   * @param header reads one header of the message by name, {@code null} when absent (e.g.
   *     {@code natsMessage.getHeaders()::getFirst})
   */
  public static Context extract(Function<String, String> header) {
    return extract(Context.root(), header);
  }

  static Context extract(Context base, Function<String, String> header) {
    return W3CTraceContextPropagator.getInstance().extract(base, header, HEADER_GETTER);
  }

  /** {@link #extract(Function)} for headers already in a map. */
  public static Context extract(Map<String, String> headers) {
    return extract(headers::get);
  }

  /**
   * Wraps a publisher so that every publication runs in a {@code PRODUCER} span; a
   * batch publisher stays a batch publisher, whose batches still overlap. See {@link TracingDecorator}.
   */
  public DispatchFn wrap(DispatchFn publisher) {
    Objects.requireNonNull(publisher, "publisher");
    return new TracingDecorator(this).wrap(publisher);
  }

  /**
   * Starts the {@code CONSUMER} span of processing one received message, child of the producer span
   * whose traceparent the message carries ({@code process <destination>}, with
   * {@code messaging.operation.type = process} and the event id as {@code messaging.message.id}). Make
   * it current while handling the message and end it afterwards.
   *
   * <pre>{@code
   * Span span = tracing.startProcessSpan(msg.getSubject(), msg.getHeaders()::getFirst);
   * try (Scope scope = span.makeCurrent()) {
   *   handle(msg);
   * } catch (RuntimeException e) {
   *   span.recordException(e);
   *   span.setStatus(StatusCode.ERROR);
   *   throw e;
   * } finally {
   *   span.end();
   * }
   * }</pre>
   */
  public Span startProcessSpan(String destination, Function<String, String> header) {
    var span = tracer.spanBuilder(MessagingAttributes.PROCESS + " " + destination)
        .setSpanKind(SpanKind.CONSUMER)
        .setParent(extract(header))
        .setAttribute(MessagingAttributes.SYSTEM, messagingSystem)
        .setAttribute(MessagingAttributes.DESTINATION_NAME, destination)
        .setAttribute(MessagingAttributes.OPERATION_NAME, MessagingAttributes.PROCESS)
        .setAttribute(MessagingAttributes.OPERATION_TYPE, MessagingAttributes.PROCESS);
    String id = OutboxHeaders.idempotencyKey(header);
    if (id != null) {
      span.setAttribute(MessagingAttributes.MESSAGE_ID, id);
    }
    return span.startSpan();
  }

  Tracer tracer() {
    return tracer;
  }

  String messagingSystem() {
    return messagingSystem;
  }

  String destinationOf(OutboxEvent event) {
    return destination.apply(event);
  }

  /** Options of {@link OutboxTracing}; {@link #build()} checks them. */
  public static final class Builder {
    private final OpenTelemetry openTelemetry;
    private String messagingSystem;
    private Function<OutboxEvent, String> destination = OutboxEvent::topic;

    private Builder(OpenTelemetry openTelemetry) {
      this.openTelemetry = openTelemetry;
    }

    /**
     * Required: the {@code messaging.system} of the spans, e.g. {@code "nats"}, {@code "rabbitmq"} or
     * {@code "kafka"} (the values of the OpenTelemetry messaging conventions).
     */
    public Builder messagingSystem(String messagingSystem) {
      this.messagingSystem = messagingSystem;
      return this;
    }

    /**
     * The {@code messaging.destination.name} of an event's publication (default: its topic), e.g.
     * {@code natsPublisher::subjectOf} when subjects carry a prefix, or the RabbitMQ exchange.
     */
    public Builder destination(Function<OutboxEvent, String> destination) {
      this.destination = destination;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is missing */
    public OutboxTracing build() {
      if (openTelemetry == null) {
        throw new InvalidConfigurationException("openTelemetry is required: OutboxTracing.builder("
            + "GlobalOpenTelemetry.get()) or the application's OpenTelemetry instance");
      }
      if (messagingSystem == null || messagingSystem.isBlank()) {
        throw new InvalidConfigurationException("messagingSystem is required, was "
            + (messagingSystem == null ? "null" : "'" + messagingSystem + "'")
            + ": .messagingSystem(\"nats\"), \"rabbitmq\" or \"kafka\"");
      }
      if (destination == null) {
        throw new InvalidConfigurationException("destination must not be null: leave it unset for the topic");
      }
      return new OutboxTracing(this);
    }
  }
}
