package io.mic.outbox.spring;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxHealth;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxListeners;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.micrometer.MicrometerOutboxMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Supplier;
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
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

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
    "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration"})
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
        .dataSource(dataSource).table(properties.getTable()).transactionalClaims(properties.isTransactionalClaims())
        .build());
    if (properties.isCreateSchema()) {
      store.createSchema();
    }
    return store;
  }

  @Bean
  @ConditionalOnMissingBean
  public TransactionalOutbox transactionalOutbox(JdbcOutboxStore store, DataSource dataSource,
      ObjectProvider<AsyncOutboxDispatcher> dispatcher) {
    return new TransactionalOutbox(store, dataSource, () -> dispatcher.ifAvailable(AsyncOutboxDispatcher::wakeUp));
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
      ListableBeanFactory beans, OutboxProperties properties, ObjectProvider<OutboxListener> listeners) {
    DispatchFn dispatchFn = dispatchFns.getIfUnique();
    if (dispatchFn == null) {
      // several without a primary (a publisher and its tracing wrapper): failing beats publishing nothing
      String[] names = beans.getBeanNamesForType(DispatchFn.class);
      throw new InvalidConfigurationException("invalid mic.outbox configuration: the dispatcher publishes"
          + " through one DispatchFn bean, but there are " + names.length + " (" + String.join(", ", names)
          + ") and none is @Primary: mark the one to publish through @Primary, or declare the"
          + " AsyncOutboxDispatcher bean yourself");
    }
    return configured(() -> AsyncOutboxDispatcher.builder()
        .store(store)
        .dispatchFn(dispatchFn)
        .useClaim(properties.isUseClaim())
        .preserveAggregateOrder(properties.isPreserveAggregateOrder())
        .workers(properties.getWorkers())
        .leaseTtl(properties.getLeaseTtl())
        .pollInterval(properties.getPollInterval())
        .batchSize(properties.getBatchSize())
        .maxAttempts(properties.getMaxAttempts())
        .retryBackoff(properties.getRetry().getInitialDelay(), properties.getRetry().getMaxDelay())
        .shutdownTimeout(properties.getShutdownTimeout())
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
    PROPERTIES.put("workers", "mic.outbox.workers");
    PROPERTIES.put("leaseTtl", "mic.outbox.lease-ttl");
    PROPERTIES.put("pollInterval", "mic.outbox.poll-interval");
    PROPERTIES.put("maxLag", "mic.outbox.health.max-lag");
    PROPERTIES.put("batchSize", "mic.outbox.batch-size");
    PROPERTIES.put("maxAttempts", "mic.outbox.max-attempts");
    PROPERTIES.put("retryBackoff", "mic.outbox.retry.initial-delay, mic.outbox.retry.max-delay");
    PROPERTIES.put("shutdownTimeout", "mic.outbox.shutdown-timeout");
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

  @Configuration(proxyBeanMethods = false)
  @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
  static class HealthConfiguration {

    @Bean
    @ConditionalOnMissingBean(name = "outboxHealthIndicator")
    OutboxHealthIndicator outboxHealthIndicator(OutboxHealth health, OutboxProperties properties) {
      return configured(() -> new OutboxHealthIndicator(health, properties.getHealth().getMaxLag()));
    }
  }
}
