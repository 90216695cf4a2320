package io.mic.outbox.spring;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxHealth;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxListeners;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.micrometer.MicrometerOutboxMetrics;
import io.mic.outbox.opentelemetry.OutboxTracing;
import io.micrometer.core.instrument.MeterRegistry;
import io.opentelemetry.api.OpenTelemetry;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;

/**
 * The outbox for a Spring Boot application with one {@link DataSource}: a {@link JdbcOutboxStore} on it, a
 * {@link TransactionalOutbox} that appends in the Spring-managed transaction, and, when the application
 * declares a {@link DispatchFn} bean (a publisher such as {@code NatsJetStreamPublisher}; of several, the
 * {@code @Primary} one), an {@link AsyncOutboxDispatcher} that publishes through it and starts and stops with
 * the context. It binds {@code outbox-micrometer} when a {@link MeterRegistry} bean exists and contributes an
 * {@code outbox} health indicator when Spring Boot's health API is present.
 *
 * <p>Every bean steps aside for one of the application's own of the same type;
 * {@code mic.outbox.enabled=false} creates none. {@link OutboxListener} beans are registered with the
 * dispatcher.
 */
@AutoConfiguration(afterName = {
    "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
    "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
    "org.springframework.boot.opentelemetry.autoconfigure.OpenTelemetrySdkAutoConfiguration",
    "org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration"})
@ConditionalOnClass({JdbcOutboxStore.class, DataSource.class})
@ConditionalOnSingleCandidate(DataSource.class)
@ConditionalOnProperty(prefix = "mic.outbox", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(OutboxProperties.class)
public class OutboxAutoConfiguration {

  /** The store on the application's DataSource; {@code mic.outbox.create-schema=true} creates its table. */
  @Bean
  @ConditionalOnMissingBean(OutboxStore.class)
  public JdbcOutboxStore outboxStore(DataSource dataSource, OutboxProperties properties) {
    JdbcOutboxStore store = configured(() -> JdbcOutboxStore.builder()
        .dataSource(dataSource).table(properties.table()).transactionalClaims(properties.transactionalClaims())
        .deleteOnDispatch(properties.deleteOnDispatch()).notifyOnAppend(properties.notifyOnAppend())
        .build());
    if (properties.createSchema()) {
      store.createSchema();
    }
    return store;
  }

  @Bean
  @ConditionalOnMissingBean
  public TransactionalOutbox transactionalOutbox(JdbcOutboxStore store, DataSource dataSource,
      ObjectProvider<AsyncOutboxDispatcher> dispatcher, ObjectProvider<OutboxCustomizer> customizers,
      ObjectProvider<OutboxPayloadSerializer> serializer) {
    List<OutboxCustomizer> each = customizers.orderedStream().toList();
    UnaryOperator<OutboxEvent> beforeAppend = event -> {
      for (OutboxCustomizer customizer : each) {
        event = customizer.beforeAppend(event);
      }
      return event;
    };
    return new TransactionalOutbox(store, dataSource, () -> dispatcher.ifAvailable(AsyncOutboxDispatcher::wakeUp),
        beforeAppend, serializer.getIfUnique());
  }

  @Bean
  @ConditionalOnMissingBean
  public OutboxHealth outboxHealth(OutboxStore store) {
    return OutboxHealth.builder().store(store).build();
  }

  @Bean
  @ConditionalOnMissingBean
  @ConditionalOnBean(DispatchFn.class)
  public AsyncOutboxDispatcher outboxDispatcher(OutboxStore store, ObjectProvider<DispatchFn> dispatchFns,
      ListableBeanFactory beans, OutboxProperties properties, ObjectProvider<OutboxListener> listeners,
      ObjectProvider<OutboxCustomizer> customizers) {
    DispatchFn dispatchFn = dispatchFns.getIfUnique();
    if (dispatchFn == null) {
      // several without a primary (a publisher and its tracing wrapper): failing beats publishing nothing
      String[] names = beans.getBeanNamesForType(DispatchFn.class);
      throw new InvalidConfigurationException("invalid mic.outbox configuration: the dispatcher publishes"
          + " through one DispatchFn bean, but there are " + names.length + " (" + String.join(", ", names)
          + ") and none is @Primary: mark the one to publish through @Primary, or declare the"
          + " AsyncOutboxDispatcher bean yourself");
    }
    for (OutboxCustomizer customizer : customizers.orderedStream().toList()) {
      dispatchFn = customizer.publisher(dispatchFn);
    }
    DispatchFn publisher = dispatchFn;
    return configured(() -> AsyncOutboxDispatcher.builder()
        .store(store)
        .dispatchFn(publisher)
        .useClaim(properties.useClaim())
        .preserveAggregateOrder(properties.preserveAggregateOrder())
        .workers(properties.workers())
        .leaseTtl(properties.leaseTtl())
        .pollInterval(properties.pollInterval())
        .batchSize(properties.batchSize())
        .maxAttempts(properties.maxAttempts())
        .retryBackoff(properties.retry().initialDelay(), properties.retry().maxDelay())
        .shutdownTimeout(properties.shutdownTimeout())
        .holdAggregateOnDeadLetter(properties.holdAggregateOnDeadLetter())
        .listener(OutboxListeners.of(listeners.orderedStream().toArray(OutboxListener[]::new)))
        .build());
  }

  @Bean
  @ConditionalOnBean(AsyncOutboxDispatcher.class)
  @ConditionalOnMissingBean
  public OutboxDispatcherLifecycle outboxDispatcherLifecycle(AsyncOutboxDispatcher dispatcher) {
    return new OutboxDispatcherLifecycle(dispatcher);
  }

  /** The builders name their option ({@code leaseTtl}); the application sets a property: name both. */
  private static final Map<String, String> PROPERTIES = new LinkedHashMap<>();

  static {
    PROPERTIES.put("table", "mic.outbox.table");
    PROPERTIES.put("useClaim", "mic.outbox.use-claim");
    PROPERTIES.put("preserveAggregateOrder", "mic.outbox.preserve-aggregate-order");
    PROPERTIES.put("holdAggregateOnDeadLetter", "mic.outbox.hold-aggregate-on-dead-letter");
    PROPERTIES.put("workers", "mic.outbox.workers");
    PROPERTIES.put("leaseTtl", "mic.outbox.lease-ttl");
    PROPERTIES.put("pollInterval", "mic.outbox.poll-interval");
    PROPERTIES.put("maxLag", "mic.outbox.health.max-lag");
    PROPERTIES.put("batchSize", "mic.outbox.batch-size");
    PROPERTIES.put("maxAttempts", "mic.outbox.max-attempts");
    PROPERTIES.put("retryBackoff", "mic.outbox.retry.initial-delay, mic.outbox.retry.max-delay");
    PROPERTIES.put("shutdownTimeout", "mic.outbox.shutdown-timeout");
    PROPERTIES.put("deleteOnDispatch", "mic.outbox.delete-on-dispatch");
    PROPERTIES.put("notifyOnAppend", "mic.outbox.notify-on-append");
    PROPERTIES.put("transactionalClaims", "mic.outbox.transactional-claims");
  }

  private static <T> T configured(Supplier<T> build) {
    try {
      return build.get();
    } catch (InvalidConfigurationException e) {
      String named = PROPERTIES.entrySet().stream().filter(p -> e.getMessage().contains(p.getKey()))
          .map(Map.Entry::getValue).collect(Collectors.joining(", "));
      throw new InvalidConfigurationException("invalid mic.outbox configuration: " + e.getMessage()
          + (named.isEmpty() ? "" : " (set " + named + ")"));
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass({MeterRegistry.class, MicrometerOutboxMetrics.class})
  @ConditionalOnSingleCandidate(MeterRegistry.class)
  static class MetricsConfiguration {

    /** Closed before the DataSource, so no scrape reads the store after shutdown. */
    @Bean
    @ConditionalOnMissingBean
    MicrometerOutboxMetrics outboxMetrics(MeterRegistry registry, OutboxStore store) {
      return MicrometerOutboxMetrics.builder().registry(registry).store(store).build();
    }

    @Bean
    OutboxListener outboxMetricsListener(MicrometerOutboxMetrics metrics) {
      return metrics.listener();
    }
  }

  /** Tracing without code: each append carries the current trace, each publication runs in a span. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = {"io.mic.outbox.opentelemetry.OutboxTracing", "io.opentelemetry.api.OpenTelemetry"})
  @ConditionalOnBean(type = "io.opentelemetry.api.OpenTelemetry")
  @ConditionalOnProperty(prefix = "mic.outbox.tracing", name = "enabled", havingValue = "true", matchIfMissing = true)
  static class TracingConfiguration {

    @Bean
    @ConditionalOnMissingBean
    OutboxTracing outboxTracing(OpenTelemetry openTelemetry, ObjectProvider<DispatchFn> publishers,
        OutboxProperties properties) {
      String system = properties.tracing().messagingSystem();
      if (system == null) {
        system = messagingSystemOf(publishers.getIfUnique());
      }
      if (system == null) {
        throw new InvalidConfigurationException("invalid mic.outbox configuration: set"
            + " mic.outbox.tracing.messaging-system (nats, rabbitmq or kafka) for the spans of the publisher bean,"
            + " whose broker cannot be told from its type; or mic.outbox.tracing.enabled=false");
      }
      return OutboxTracing.builder(openTelemetry).messagingSystem(system).build();
    }

    /** The broker of one of the three publishers, told by its class name so that no module must be present. */
    private static String messagingSystemOf(DispatchFn publisher) {
      String type = publisher == null ? "" : publisher.getClass().getName();
      return switch (type) {
        case "io.mic.outbox.nats.NatsJetStreamPublisher" -> "nats";
        case "io.mic.outbox.rabbitmq.RabbitMqPublisher" -> "rabbitmq";
        case "io.mic.outbox.kafka.KafkaPublisher" -> "kafka";
        default -> null;
      };
    }

    @Bean
    OutboxCustomizer outboxTracingCustomizer(OutboxTracing tracing) {
      return new OutboxCustomizer() {
        @Override
        public DispatchFn publisher(DispatchFn publisher) {
          return tracing.wrap(publisher);
        }

        @Override
        public OutboxEvent beforeAppend(OutboxEvent event) {
          return OutboxTracing.withCurrentTrace(event);
        }
      };
    }
  }

  /** Objects as payloads, serialized by the application's Jackson 3 ObjectMapper (Boot's), else a default one. */
  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "tools.jackson.databind.ObjectMapper")
  static class JacksonConfiguration {

    @Bean
    @ConditionalOnMissingBean
    OutboxPayloadSerializer outboxPayloadSerializer(ObjectProvider<ObjectMapper> mappers) {
      ObjectMapper mapper = mappers.getIfUnique(() -> JsonMapper.builder().build());
      return mapper::writeValueAsString;
    }
  }

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class HealthConfiguration {

    @Bean
    @ConditionalOnMissingBean(name = "outboxHealthIndicator")
    @ConditionalOnEnabledHealthIndicator("outbox")
    OutboxHealthIndicator outboxHealthIndicator(OutboxHealth health, OutboxStore store, OutboxProperties properties) {
      return configured(() -> new OutboxHealthIndicator(health, store, properties.health().maxLag()));
    }
  }
}
