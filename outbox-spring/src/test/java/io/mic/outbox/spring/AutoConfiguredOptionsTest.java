package io.mic.outbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxControl;
import io.mic.outbox.test.OutboxTestDatabase;
import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.context.Scope;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.testing.exporter.InMemorySpanExporter;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import java.math.BigDecimal;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jackson.autoconfigure.JacksonAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * What the auto-configuration does without code, in a real Boot context on PostgreSQL: tracing with an
 * {@code OpenTelemetry} bean, objects as payloads through Boot's Jackson 3 mapper, and the store options.
 */
class AutoConfiguredOptionsTest {
  private static final OutboxTestDatabase DB = OutboxTestDatabase.postgres();

  private String table;
  private ApplicationContextRunner runner;

  @BeforeEach
  void setUp() {
    table = DB.newTable();
    runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
            DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
            JacksonAutoConfiguration.class, OutboxPublisherAutoConfiguration.class, OutboxAutoConfiguration.class))
        .withPropertyValues("spring.datasource.url=" + DB.url(), "spring.datasource.username=" + DB.user(),
            "spring.datasource.password=" + DB.password(), "spring.datasource.hikari.maximum-pool-size=4",
            "mic.outbox.table=" + table, "mic.outbox.create-schema=true", "mic.outbox.poll-interval=50ms")
        .withUserConfiguration(Recording.class);
  }

  @AfterEach
  void dropTable() {
    DB.dropStore(table);
  }

  @Test
  void withAnOpenTelemetryBeanAnAppendCarriesTheTraceAndThePublicationRunsInAProducerSpan() {
    runner.withUserConfiguration(Tracing.class).withPropertyValues("mic.outbox.tracing.messaging-system=rabbitmq")
        .run(context -> {
      OpenTelemetry otel = context.getBean(OpenTelemetry.class);
      Span request = otel.getTracer("test").spanBuilder("POST /orders").setSpanKind(SpanKind.SERVER).startSpan();
      OutboxEvent event = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
      try (Scope scope = request.makeCurrent()) {
        context.getBean(TransactionTemplate.class)
            .executeWithoutResult(s -> context.getBean(TransactionalOutbox.class).append(event));
      } finally {
        request.end();
      }

      Recording published = context.getBean(Recording.class);
      await().atMost(Duration.ofSeconds(10)).until(() -> !published.events.isEmpty());
      String traceId = request.getSpanContext().getTraceId();
      assertThat(context.getBean(JdbcOutboxStore.class).find(event.id()).orElseThrow().traceParent())
          .as("captured at append").isEqualTo("00-" + traceId + "-" + request.getSpanContext().getSpanId() + "-"
              + request.getSpanContext().getTraceFlags().asHex());
      assertThat(published.events.get(0).traceParent()).as("the message carries the producer span, same trace")
          .startsWith("00-" + traceId + "-");
      InMemorySpanExporter spans = context.getBean(InMemorySpanExporter.class);
      await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(spans.getFinishedSpanItems())
          .filteredOn(s -> s.getKind() == SpanKind.PRODUCER).extracting(SpanData::getTraceId).containsExactly(traceId));
    });
  }

  @Test
  void tracingCanBeTurnedOff() {
    runner.withUserConfiguration(Tracing.class).withPropertyValues("mic.outbox.tracing.enabled=false")
        .run(context -> assertThat(context).doesNotHaveBean(io.mic.outbox.opentelemetry.OutboxTracing.class)
            .doesNotHaveBean(OutboxCustomizer.class));
  }

  record OrderCreated(String orderId, BigDecimal totalAmount) {}

  @Test
  void anObjectIsAppendedAsJsonByBootsObjectMapper() {
    runner.withPropertyValues("spring.jackson.property-naming-strategy=SNAKE_CASE").run(context -> {
      TransactionalOutbox outbox = context.getBean(TransactionalOutbox.class);
      OutboxEvent event = context.getBean(TransactionTemplate.class).execute(s ->
          outbox.append("order", "42", "order.created", new OrderCreated("42", new BigDecimal("12.50"))));

      assertThat(context.getBean(JdbcOutboxStore.class).find(event.id()).orElseThrow().payload())
          .as("Boot's mapper, spring.jackson.* included").isEqualTo("{\"order_id\":\"42\",\"total_amount\":12.50}");
      assertThatThrownBy(() -> outbox.event("order", "42", "order.created", "{\"a\":1}"))
          .isInstanceOf(OutboxException.class).hasMessageContaining("OutboxEvent.builder().payload(text)");
    });
  }

  @Test
  void deleteOnDispatchRemovesThePublishedEvent() {
    runner.withPropertyValues("mic.outbox.delete-on-dispatch=true").run(context -> {
      OutboxEvent event = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
      context.getBean(TransactionTemplate.class)
          .executeWithoutResult(s -> context.getBean(TransactionalOutbox.class).append(event));

      await().atMost(Duration.ofSeconds(10)).until(() -> !context.getBean(Recording.class).events.isEmpty());
      await().atMost(Duration.ofSeconds(10))
          .until(() -> context.getBean(JdbcOutboxStore.class).find(event.id()).isEmpty());
    });
  }

  /** An append by another process (here: plain JDBC, no wake-up in this one) reaches an idle dispatcher at once. */
  @Test
  void notifyOnAppendWakesTheDispatcherForAnAppendMadeElsewhere() {
    runner.withPropertyValues("mic.outbox.notify-on-append=true", "mic.outbox.poll-interval=1h").run(context -> {
      JdbcOutboxStore store = context.getBean(JdbcOutboxStore.class);
      await().pollDelay(Duration.ofMillis(500)).atMost(Duration.ofSeconds(5)).until(() -> true); // the first poll is over
      OutboxEvent event = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
      try (Connection c = context.getBean(DataSource.class).getConnection()) {
        c.setAutoCommit(false);
        store.append(c, event);
        c.commit();
      }
      await().atMost(Duration.ofSeconds(10)).until(() -> !context.getBean(Recording.class).events.isEmpty());
    });
  }

  /** A dead head keeps its aggregate waiting; other aggregates flow; health and the store name it. */
  @Test
  void holdAggregateOnDeadLetterKeepsTheAggregateWaitingBehindItsDeadEvent() {
    runner.withPropertyValues("mic.outbox.use-claim=true", "mic.outbox.preserve-aggregate-order=true",
        "mic.outbox.hold-aggregate-on-dead-letter=true", "mic.outbox.max-attempts=1").run(context -> {
      TransactionalOutbox outbox = context.getBean(TransactionalOutbox.class);
      TransactionTemplate tx = context.getBean(TransactionTemplate.class);
      OutboxEvent poison = OutboxEvent.builder().aggregate("order", "1").topic("order.poison").payload("{}").build();
      OutboxEvent behind = OutboxEvent.builder().aggregate("order", "1").topic("order.paid").payload("{}").build();
      tx.executeWithoutResult(s -> outbox.append(List.of(poison, behind)));
      JdbcOutboxStore store = context.getBean(JdbcOutboxStore.class);
      await().atMost(Duration.ofSeconds(10)).until(() -> store.heldAggregates().size() == 1);

      // another aggregate's event, appended after the dead letter, goes out; the held one's does not
      OutboxEvent other = OutboxEvent.builder().aggregate("order", "2").topic("order.paid").payload("{}").build();
      tx.executeWithoutResult(s -> outbox.append(other));
      Recording published = context.getBean(Recording.class);
      await().atMost(Duration.ofSeconds(10))
          .until(() -> published.events.stream().anyMatch(e -> e.id().equals(other.id())));
      assertThat(published.events).extracting(OutboxEvent::id).doesNotContain(behind.id());
      assertThat(store.heldAggregates()).singleElement()
          .satisfies(h -> assertThat(h.deadEventId()).isEqualTo(poison.id()))
          .satisfies(h -> assertThat(h.waiting()).isEqualTo(1));
      assertThat(context.getBean(OutboxHealthIndicator.class).health().getDetails())
          .containsEntry("heldAggregates", 1L);
    });
  }

  @Test
  void holdAggregateOnDeadLetterWithoutOrderFailsTheStartNamingTheProperties() {
    runner.withPropertyValues("mic.outbox.hold-aggregate-on-dead-letter=true").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("holdAggregateOnDeadLetter")
          .hasMessageContaining("mic.outbox.hold-aggregate-on-dead-letter")
          .hasMessageContaining("mic.outbox.preserve-aggregate-order");
    });
  }

  /** A planned pause is not a failure: its events wait on purpose and do not make the outbox down. */
  @Test
  void pausedTopicsDoNotCountTowardTheLagThatJudgesHealth() {
    new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
            DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
            OutboxAutoConfiguration.class))
        .withPropertyValues("spring.datasource.url=" + DB.url(), "spring.datasource.username=" + DB.user(),
            "spring.datasource.password=" + DB.password(), "mic.outbox.table=" + table,
            "mic.outbox.create-schema=true", "mic.outbox.health.max-lag=0s")
        .run(context -> {
          JdbcOutboxStore store = context.getBean(JdbcOutboxStore.class);
          OutboxControl control = OutboxControl.builder().store(store).build();
          OutboxHealthIndicator indicator = context.getBean(OutboxHealthIndicator.class);
          TransactionalOutbox outbox = context.getBean(TransactionalOutbox.class);
          TransactionTemplate tx = context.getBean(TransactionTemplate.class);
          control.pause("order.created", "consumer deploy");
          tx.executeWithoutResult(s -> outbox.append(OutboxEvent.builder().aggregate("order", "1")
              .topic("order.created").payload("{}").build()));

          await().atMost(Duration.ofSeconds(5)).until(() -> !"none".equals(indicator.health().getDetails().get("lag")));
          assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
          assertThat(indicator.health().getDetails()).containsEntry("paused", "order.created")
              .containsEntry("unpausedLag", "none").containsEntry("pending", 1L);

          tx.executeWithoutResult(s -> outbox.append(OutboxEvent.builder().aggregate("order", "2")
              .topic("order.paid").payload("{}").build()));
          await().atMost(Duration.ofSeconds(5)).until(() -> indicator.health().getStatus().equals(Status.DOWN));

          control.pause(null, "maintenance");
          assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
          assertThat(indicator.health().getDetails()).containsEntry("paused", "all");
        });
  }

  @Configuration(proxyBeanMethods = false)
  static class Recording implements DispatchFn {
    final List<OutboxEvent> events = new CopyOnWriteArrayList<>();

    @Override
    public void dispatch(OutboxEvent event) {
      if (event.topic().equals("order.poison")) {
        throw new IllegalArgumentException("the broker refuses order.poison");
      }
      events.add(event);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Tracing {
    @Bean
    InMemorySpanExporter spanExporter() {
      return InMemorySpanExporter.create();
    }

    @Bean(destroyMethod = "close")
    OpenTelemetrySdk openTelemetry(InMemorySpanExporter exporter) {
      return OpenTelemetrySdk.builder().setTracerProvider(SdkTracerProvider.builder()
          .addSpanProcessor(SimpleSpanProcessor.create(exporter)).build()).build();
    }
  }
}
