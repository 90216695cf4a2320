package io.mic.outbox.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.test.OutboxTestDatabase;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.ClaimRequest;
import io.mic.outbox.ClaimedBatch;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHealth;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.micrometer.MicrometerOutboxMetrics;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.transaction.autoconfigure.TransactionAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.transaction.annotation.Transactional;
import org.springframework.transaction.support.TransactionTemplate;

/** A real Spring Boot context on a real PostgreSQL: the auto-configuration as an application gets it. */
class OutboxAutoConfigurationTest {
  private static final OutboxTestDatabase DB = OutboxTestDatabase.postgres();

  private String table;
  private ApplicationContextRunner runner;

  @BeforeEach
  void setUp() {
    table = DB.newTable();
    runner = new ApplicationContextRunner()
        .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
            DataSourceTransactionManagerAutoConfiguration.class, TransactionAutoConfiguration.class,
            OutboxAutoConfiguration.class))
        .withPropertyValues("spring.datasource.url=" + DB.url(), "spring.datasource.username=" + DB.user(),
            "spring.datasource.password=" + DB.password(), "spring.datasource.hikari.maximum-pool-size=4")
        .withPropertyValues("mic.outbox.table=" + table, "mic.outbox.create-schema=true",
            "mic.outbox.poll-interval=50ms");
  }

  @AfterEach
  void dropTable() {
    if (table != null) {
      DB.dropStore(table);
      DB.execute("DROP TABLE IF EXISTS " + table + "_orders");
    }
  }

  @Test
  void aRolledBackTransactionalMethodLeavesNoEvent() {
    runner.withUserConfiguration(Recording.class, Orders.class).run(context -> {
      OutboxEvent event = event("o-1");
      assertThatThrownBy(() -> context.getBean(OrderService.class).placeAndFail(event))
          .isInstanceOf(IllegalStateException.class).hasMessage("payment refused");

      assertThat(context.getBean(JdbcOutboxStore.class).find(event.id())).isEmpty();
      assertThat(statusCounts()).isEmpty();
      assertThat(orderRows()).isZero();
    });
  }

  @Test
  void aCommittedTransactionalMethodIsDispatchedThroughTheDispatchFnBean() {
    runner.withUserConfiguration(Recording.class, Orders.class).run(context -> {
      OutboxEvent event = event("o-2");
      context.getBean(OrderService.class).place(event);

      RecordingDispatch published = context.getBean(RecordingDispatch.class);
      await().atMost(Duration.ofSeconds(10)).until(() -> published.ids.contains(event.id()));
      await().atMost(Duration.ofSeconds(10)).until(() -> statusCounts().equals(Map.of(OutboxStatus.DISPATCHED, 1L)));
      assertThat(published.ids).containsExactly(event.id());
      assertThat(orderRows()).isOne();
    });
  }

  /** What a checkpoint and restore does to the context: every lifecycle bean is stopped, then started. */
  @Test
  void aContextStoppedAndStartedAgainDispatchesAgain() {
    runner.withUserConfiguration(Recording.class).run(context -> {
      TransactionTemplate tx = context.getBean(TransactionTemplate.class);
      TransactionalOutbox outbox = context.getBean(TransactionalOutbox.class);
      RecordingDispatch published = context.getBean(RecordingDispatch.class);
      OutboxEvent before = event("o-8");
      tx.executeWithoutResult(status -> outbox.append(before));
      await().atMost(Duration.ofSeconds(10)).until(() -> published.ids.contains(before.id()));

      context.stop();
      assertThat(context.getBean(OutboxDispatcherLifecycle.class).isRunning()).isFalse();
      await().atMost(Duration.ofSeconds(10)).alias("the dispatcher's threads end").until(() -> Thread.getAllStackTraces()
          .keySet().stream().noneMatch(t -> t.isAlive() && t.getName().startsWith("mic-outbox-dispatcher-")));
      context.start();
      assertThat(context.getBean(OutboxDispatcherLifecycle.class).isRunning()).isTrue();

      OutboxEvent after = event("o-9");
      tx.executeWithoutResult(status -> outbox.append(after));
      await().atMost(Duration.ofSeconds(10)).until(() -> statusCounts().equals(Map.of(OutboxStatus.DISPATCHED, 2L)));
      assertThat(published.ids).containsExactly(before.id(), after.id());
    });
  }

  @Test
  void aTransactionTemplateJoinsToo() {
    runner.withUserConfiguration(Recording.class).run(context -> {
      TransactionTemplate tx = context.getBean(TransactionTemplate.class);
      TransactionalOutbox outbox = context.getBean(TransactionalOutbox.class);
      OutboxEvent kept = event("o-3");
      OutboxEvent rolledBack = event("o-4");
      tx.executeWithoutResult(status -> outbox.append(List.of(kept)));
      tx.executeWithoutResult(status -> {
        outbox.append(rolledBack);
        status.setRollbackOnly();
      });

      RecordingDispatch published = context.getBean(RecordingDispatch.class);
      await().atMost(Duration.ofSeconds(10)).until(() -> published.ids.contains(kept.id()));
      JdbcOutboxStore store = context.getBean(JdbcOutboxStore.class);
      assertThat(store.find(rolledBack.id())).isEmpty();
      assertThat(published.ids).containsExactly(kept.id());
    });
  }

  @Test
  void aWakeUpThatFailsAfterTheCommitDoesNotMakeTheCommittedTransactionLookFailed() {
    // e.g. the context is closing and the dispatcher bean is gone: the transaction has committed by then, and
    // an exception would make the caller retry a business change that is already done
    runner.run(context -> {
      TransactionalOutbox outbox = new TransactionalOutbox(context.getBean(JdbcOutboxStore.class),
          context.getBean(DataSource.class), () -> {
            throw new IllegalStateException("the dispatcher bean is being destroyed");
          });
      OutboxEvent event = event("o-10");
      context.getBean(TransactionTemplate.class).executeWithoutResult(status -> outbox.append(event));
      assertThat(statusCounts()).isEqualTo(Map.of(OutboxStatus.PENDING, 1L));
    });
  }

  @Test
  void appendingWithoutATransactionFailsAndNamesTheFix() {
    runner.withUserConfiguration(Recording.class).run(context -> {
      OutboxEvent event = event("o-5");
      assertThatThrownBy(() -> context.getBean(TransactionalOutbox.class).append(event))
          .isInstanceOf(OutboxException.class)
          .hasMessage(TransactionalOutbox.NO_TRANSACTION)
          .hasMessageContaining("@Transactional").hasMessageContaining("TransactionTemplate");
      assertThat(statusCounts()).isEmpty();
    });
  }

  @Test
  void anAppendInATransactionOfAnotherResourceIsRefusedInsteadOfWrittenApart() throws SQLException {
    // the application's only transaction manager manages another database; the outbox's pool hands out
    // connections with or without auto-commit: either way the event would not commit with the transaction
    for (String autoCommit : List.of("false", "true")) {
      runner.withUserConfiguration(OtherDatabase.class)
          .withPropertyValues("spring.datasource.hikari.auto-commit=" + autoCommit)
          .run(context -> {
            OutboxEvent event = event("o-8-" + autoCommit);
            TransactionTemplate tx = context.getBean(TransactionTemplate.class);
            TransactionalOutbox outbox = context.getBean(TransactionalOutbox.class);
            assertThatThrownBy(() -> tx.executeWithoutResult(status -> outbox.append(event)))
                .as("auto-commit=" + autoCommit)
                .isInstanceOf(OutboxException.class)
                .hasMessage(TransactionalOutbox.OTHER_RESOURCE);
          });
      assertThat(statusCounts()).as("auto-commit=" + autoCommit).isEmpty();
    }
  }

  @Test
  void closingTheContextFinishesInFlightPublicationsAndLeavesNothingProcessing() {
    int events = 20;
    runner.withUserConfiguration(SlowPublisher.class).run(context -> {
      TransactionTemplate tx = context.getBean(TransactionTemplate.class);
      List<OutboxEvent> batch = new ArrayList<>();
      for (int i = 0; i < events; i++) {
        batch.add(event("slow-" + i));
      }
      tx.executeWithoutResult(status -> context.getBean(TransactionalOutbox.class).append(batch));
      SlowDispatch publisher = context.getBean(SlowDispatch.class);
      assertThat(publisher.entered.await(10, TimeUnit.SECONDS)).isTrue();

      context.close();

      Map<OutboxStatus, Long> counts = statusCounts();
      assertThat(counts).doesNotContainKey(OutboxStatus.PROCESSING);
      assertThat(counts.getOrDefault(OutboxStatus.DISPATCHED, 0L) + counts.getOrDefault(OutboxStatus.PENDING, 0L))
          .isEqualTo(events);
      // the publication in flight at shutdown was allowed to finish and was marked
      assertThat(counts.get(OutboxStatus.DISPATCHED)).isEqualTo(publisher.finished.size());
      assertThat(publisher.finished).isNotEmpty();
    });
  }

  @Test
  void propertiesBindIncludingDurations() {
    // no DispatchFn bean: no dispatcher, which would refuse this combination of options
    runner
        .withPropertyValues("mic.outbox.use-claim=false", "mic.outbox.preserve-aggregate-order=true",
            "mic.outbox.workers=3", "mic.outbox.lease-ttl=45s", "mic.outbox.poll-interval=PT0.25S",
            "mic.outbox.health.max-lag=2m")
        .run(context -> {
          OutboxProperties p = context.getBean(OutboxProperties.class);
          assertThat(p.enabled()).isTrue();
          assertThat(p.table()).isEqualTo(table);
          assertThat(p.useClaim()).isFalse();
          assertThat(p.preserveAggregateOrder()).isTrue();
          assertThat(p.workers()).isEqualTo(3);
          assertThat(p.leaseTtl()).isEqualTo(Duration.ofSeconds(45));
          assertThat(p.pollInterval()).isEqualTo(Duration.ofMillis(250));
          assertThat(p.createSchema()).isTrue();
          assertThat(p.health().maxLag()).isEqualTo(Duration.ofMinutes(2));
          assertThat(context.getBean(JdbcOutboxStore.class).table()).isEqualTo(table);
          assertThat(context.getBean(OutboxHealthIndicator.class).health().getDetails())
              .containsEntry("maxLag", "PT2M");
        });
  }

  @Test
  void transactionalClaimsReachTheStore() {
    // no DispatchFn bean: the test claims itself, and a claim held by a transaction leaves the row PENDING
    runner.withPropertyValues("mic.outbox.transactional-claims=true").run(context -> {
      assertThat(context.getBean(OutboxProperties.class).transactionalClaims()).isTrue();
      JdbcOutboxStore store = context.getBean(JdbcOutboxStore.class);
      OutboxEvent event = event("o-12");
      context.getBean(TransactionTemplate.class)
          .executeWithoutResult(status -> context.getBean(TransactionalOutbox.class).append(event));

      ClaimedBatch batch = store.claimBatch(ClaimRequest.of("test", 1, Duration.ofMinutes(1)));
      assertThat(batch.events()).extracting(OutboxEvent::id).containsExactly(event.id());
      assertThat(store.find(event.id()).orElseThrow().status()).as("locked, not leased")
          .isEqualTo(OutboxStatus.PENDING);
      assertThat(batch.markDispatched(batch.events())).containsExactly(event.id());
      assertThat(store.find(event.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DISPATCHED);
    });
  }

  @Test
  void theRetryPropertiesReachTheDispatcher() {
    // max-attempts 2 and a 20 ms backoff: an event whose publication always fails is dead-lettered after
    // exactly two attempts within seconds, where the defaults (10 attempts from 1 s on) would take minutes
    runner.withUserConfiguration(AlwaysRejecting.class)
        .withPropertyValues("mic.outbox.max-attempts=2", "mic.outbox.retry.initial-delay=20ms",
            "mic.outbox.retry.max-delay=40ms", "mic.outbox.batch-size=7", "mic.outbox.shutdown-timeout=3s",
            "mic.outbox.poll-interval=20ms")
        .run(context -> {
          OutboxProperties p = context.getBean(OutboxProperties.class);
          assertThat(p.batchSize()).isEqualTo(7);
          assertThat(p.shutdownTimeout()).isEqualTo(Duration.ofSeconds(3));
          OutboxEvent event = event("o-11");
          context.getBean(TransactionTemplate.class)
              .executeWithoutResult(status -> context.getBean(TransactionalOutbox.class).append(event));
          JdbcOutboxStore store = context.getBean(JdbcOutboxStore.class);
          await().atMost(Duration.ofSeconds(10))
              .until(() -> store.find(event.id()).orElseThrow().status() == OutboxStatus.DLQ);
          assertThat(store.find(event.id()).orElseThrow().attempts()).isEqualTo(2);
        });
  }

  @Test
  void aBatchSizeOutOfRangeFailsTheStartNamingIt() {
    runner.withUserConfiguration(Recording.class).withPropertyValues("mic.outbox.batch-size=0")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageStartingWith("invalid mic.outbox configuration: batchSize must be between 1 and ")
            .hasMessageEndingWith(", was 0 (set mic.outbox.batch-size)"));
  }

  @Test
  void theDefaultsAreThoseOfTheLibraryWithClaimsOn() {
    new ApplicationContextRunner()
        .withUserConfiguration(PropertiesOnly.class)
        .run(context -> {
          OutboxProperties p = context.getBean(OutboxProperties.class);
          assertThat(p.table()).isEqualTo(JdbcOutboxStore.DEFAULT_TABLE);
          assertThat(p.useClaim()).isTrue();
          assertThat(p.preserveAggregateOrder()).isFalse();
          assertThat(p.workers()).isEqualTo(AsyncOutboxDispatcher.DEFAULT_WORKERS);
          assertThat(p.leaseTtl()).isEqualTo(OutboxDispatcher.DEFAULT_LEASE_TTL);
          assertThat(p.holdAggregateOnDeadLetter()).isFalse();
          assertThat(p.pollInterval()).isEqualTo(Duration.ofMillis(200));
          assertThat(p.createSchema()).isFalse();
        });
  }

  @Test
  void anInvalidPropertyFailsTheStartNamingIt() {
    runner.withUserConfiguration(Recording.class).withPropertyValues("mic.outbox.lease-ttl=0s")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessage("invalid mic.outbox configuration: leaseTtl must be > 0, was PT0S"
                + " (set mic.outbox.lease-ttl)"));
  }

  @Test
  void aNegativeMaxLagFailsTheStartNamingIt() {
    runner.withPropertyValues("mic.outbox.health.max-lag=-1m")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessage("invalid mic.outbox configuration: maxLag must be >= 0, was PT-1M"
                + " (set mic.outbox.health.max-lag)"));
  }

  @Test
  void anImpossibleCombinationFailsTheStartNamingTheProperties() {
    runner.withUserConfiguration(Recording.class)
        .withPropertyValues("mic.outbox.use-claim=false", "mic.outbox.preserve-aggregate-order=true",
            "mic.outbox.workers=2")
        .run(context -> assertThat(context).getFailure().rootCause()
            .hasMessageStartingWith("invalid mic.outbox configuration: preserveAggregateOrder(true) with"
                + " workers(2) requires useClaim(true)")
            .hasMessageEndingWith("(set mic.outbox.use-claim, mic.outbox.preserve-aggregate-order,"
                + " mic.outbox.workers)"));
  }

  @Test
  void theApplicationsOwnBeansReplaceTheDefaults() {
    runner.withUserConfiguration(Recording.class, OwnBeans.class).run(context -> {
      OwnBeans own = context.getBean(OwnBeans.class);
      assertThat(context).hasSingleBean(JdbcOutboxStore.class).hasSingleBean(OutboxHealth.class)
          .hasSingleBean(AsyncOutboxDispatcher.class).hasSingleBean(TransactionalOutbox.class);
      assertThat(context.getBean(JdbcOutboxStore.class)).isSameAs(own.store);
      assertThat(context.getBean(OutboxHealth.class)).isSameAs(own.health);
      assertThat(context.getBean(AsyncOutboxDispatcher.class)).isSameAs(own.dispatcher);
      assertThat(context.getBean(TransactionalOutbox.class)).isSameAs(own.outbox);
      // the application's dispatcher still starts and stops with the context
      assertThat(context.getBean(OutboxDispatcherLifecycle.class).dispatcher()).isSameAs(own.dispatcher);
      assertThat(context.getBean(OutboxDispatcherLifecycle.class).isRunning()).isTrue();
    });
  }

  @Test
  void disabledCreatesNothing() throws SQLException {
    runner.withUserConfiguration(Recording.class).withPropertyValues("mic.outbox.enabled=false")
        .run(context -> assertThat(context).hasNotFailed()
            .doesNotHaveBean(OutboxProperties.class).doesNotHaveBean(JdbcOutboxStore.class)
            .doesNotHaveBean(TransactionalOutbox.class).doesNotHaveBean(OutboxHealth.class)
            .doesNotHaveBean(AsyncOutboxDispatcher.class).doesNotHaveBean(OutboxDispatcherLifecycle.class)
            .doesNotHaveBean(OutboxHealthIndicator.class));
    assertThat(tableExists()).isFalse();
  }

  @Test
  void withoutADispatchFnBeanTheApplicationOnlyAppends() {
    runner.run(context -> assertThat(context).hasNotFailed()
        .hasSingleBean(JdbcOutboxStore.class).hasSingleBean(TransactionalOutbox.class)
        .doesNotHaveBean(AsyncOutboxDispatcher.class).doesNotHaveBean(OutboxDispatcherLifecycle.class));
  }

  @Test
  void severalDispatchFnBeansWithoutAPrimaryFailTheStartNamingThem() {
    // e.g. a publisher and the tracing wrapper around it: which one publishes is the application's choice
    runner.withUserConfiguration(Recording.class, Wrapped.class)
        .run(context -> assertThat(context).getFailure().rootCause()
            .isInstanceOf(InvalidConfigurationException.class)
            .hasMessage("invalid mic.outbox configuration: the dispatcher publishes through one DispatchFn"
                + " bean, but there are 2 (recordingDispatch, wrappedDispatch) and none is @Primary: mark"
                + " the one to publish through @Primary, or declare the AsyncOutboxDispatcher bean yourself"));
  }

  @Test
  void thePrimaryOfSeveralDispatchFnBeansPublishes() {
    runner.withUserConfiguration(Recording.class, Wrapped.class, PrimaryRecording.class).run(context -> {
      OutboxEvent event = event("o-9");
      context.getBean(TransactionTemplate.class)
          .executeWithoutResult(status -> context.getBean(TransactionalOutbox.class).append(event));

      RecordingDispatch primary = context.getBean("primaryDispatch", RecordingDispatch.class);
      await().atMost(Duration.ofSeconds(10)).until(() -> primary.ids.contains(event.id()));
      assertThat(primary.ids).containsExactly(event.id());
      assertThat(context.getBean("recordingDispatch", RecordingDispatch.class).ids).isEmpty();
    });
  }

  @Test
  void aMeterRegistryBeanGetsTheOutboxMeters() {
    runner.withUserConfiguration(Recording.class, Meters.class).run(context -> {
      assertThat(context).hasSingleBean(MicrometerOutboxMetrics.class);
      OutboxEvent event = event("o-6");
      context.getBean(TransactionTemplate.class)
          .executeWithoutResult(status -> context.getBean(TransactionalOutbox.class).append(event));
      MeterRegistry registry = context.getBean(MeterRegistry.class);
      await().atMost(Duration.ofSeconds(10)).until(() -> registry.find("mic.outbox.events.dispatched").counter() != null
          && registry.find("mic.outbox.events.dispatched").counter().count() == 1.0);
      assertThat(registry.get("mic.outbox.events").tag("status", "DISPATCHED").gauge()).isNotNull();
    });
  }

  @Test
  void withoutAMeterRegistryOrMicrometerNoMetricsAreBound() {
    runner.withUserConfiguration(Recording.class)
        .run(context -> assertThat(context).doesNotHaveBean(MicrometerOutboxMetrics.class));
    runner.withUserConfiguration(Recording.class, Meters.class)
        .withClassLoader(new FilteredClassLoader(MicrometerOutboxMetrics.class))
        .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(MicrometerOutboxMetrics.class));
  }

  @Test
  void theHealthIndicatorReportsTheOutbox() {
    runner.withUserConfiguration(Recording.class).run(context -> {
      context.getBean(OutboxDispatcherLifecycle.class).dispatcher().pause();
      OutboxEvent event = event("o-7");
      context.getBean(TransactionTemplate.class)
          .executeWithoutResult(status -> context.getBean(TransactionalOutbox.class).append(event));

      Health health = context.getBean("outboxHealthIndicator", OutboxHealthIndicator.class).health();
      assertThat(health.getStatus()).isEqualTo(Status.UP);
      assertThat(health.getDetails()).containsEntry("pending", 1L).containsEntry("dlq", 0L)
          .containsEntry("maxLag", "PT5M");
    });
  }

  @Test
  void theHealthIndicatorShowsTheAgeOfATransactionLeftOpen() {
    runner.withUserConfiguration(Recording.class).run(context -> {
      OutboxHealthIndicator indicator = context.getBean(OutboxHealthIndicator.class);
      await().atMost(Duration.ofSeconds(20))
          .until(() -> "none".equals(indicator.health().getDetails().get("oldestTransactionAge")));
      try (Connection c = DB.dataSource().getConnection()) {
        c.setAutoCommit(false);
        try (Statement s = c.createStatement()) {
          s.execute("SELECT txid_current()"); // a transaction id, held until the commit
        }
        await().atMost(Duration.ofSeconds(20)).until(() -> indicator.health().getDetails()
            .get("oldestTransactionAge") instanceof String age && !age.equals("none")
            && Duration.parse(age).compareTo(Duration.ofMillis(300)) >= 0);
        Health health = indicator.health();
        assertThat(health.getStatus()).as("an old transaction alone does not make the outbox down")
            .isEqualTo(Status.UP);
        c.commit();
      }
      await().atMost(Duration.ofSeconds(20))
          .until(() -> "none".equals(indicator.health().getDetails().get("oldestTransactionAge")));
    });
  }

  @Test
  void theHealthIndicatorIsDownWhenTheStoreCannotBeRead() {
    runner.withUserConfiguration(Recording.class).run(context -> {
      DB.dropStore(table);
      Health health = context.getBean(OutboxHealthIndicator.class).health();
      assertThat(health.getStatus()).isEqualTo(Status.DOWN);
    });
  }

  @Test
  void withoutSpringBootsHealthApiNoIndicatorIsCreated() {
    runner.withUserConfiguration(Recording.class)
        .withClassLoader(new FilteredClassLoader("org.springframework.boot.health"))
        .run(context -> assertThat(context).hasNotFailed().hasSingleBean(OutboxHealth.class)
            .doesNotHaveBean(OutboxHealthIndicator.class));
  }

  // ---- what the tests read, outside the context

  private OutboxEvent event(String orderId) {
    return OutboxEvent.builder().aggregate("order", orderId).topic("order.placed")
        .payload("{\"order\":\"" + orderId + "\"}").build();
  }

  private Map<OutboxStatus, Long> statusCounts() throws SQLException {
    Map<OutboxStatus, Long> counts = new EnumMap<>(OutboxStatus.class);
    try (Connection c = connect(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT status, count(*) FROM " + table + " GROUP BY status")) {
      while (rs.next()) {
        counts.put(OutboxStatus.valueOf(rs.getString(1)), rs.getLong(2));
      }
    }
    return counts;
  }

  private long orderRows() throws SQLException {
    try (Connection c = connect(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table + "_orders")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private boolean tableExists() throws SQLException {
    try (Connection c = connect(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT to_regclass('" + table + "') IS NOT NULL")) {
      rs.next();
      return rs.getBoolean(1);
    }
  }

  private static Connection connect() throws SQLException {
    return DriverManager.getConnection(DB.url(), DB.user(), DB.password());
  }

  // ---- the application under test

  static final class RecordingDispatch implements DispatchFn {
    final List<UUID> ids = new CopyOnWriteArrayList<>();

    @Override
    public void dispatch(OutboxEvent event) {
      ids.add(event.id());
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class AlwaysRejecting {
    @Bean
    DispatchFn alwaysRejecting() {
      return event -> {
        throw new IllegalStateException("the broker refuses this event");
      };
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Recording {
    @Bean
    RecordingDispatch recordingDispatch() {
      return new RecordingDispatch();
    }
  }

  /** Takes a measurable time per publication, so the context closes while one is in flight. */
  static final class SlowDispatch implements DispatchFn {
    final CountDownLatch entered = new CountDownLatch(1);
    final List<UUID> finished = new CopyOnWriteArrayList<>();

    @Override
    public void dispatch(OutboxEvent event) throws InterruptedException {
      entered.countDown();
      Thread.sleep(200);  // the broker's round trip
      finished.add(event.id());
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class SlowPublisher {
    @Bean
    SlowDispatch slowDispatch() {
      return new SlowDispatch();
    }
  }

  public static class OrderService {
    private final TransactionalOutbox outbox;
    private final DataSource dataSource;
    private final String orders;

    public OrderService(TransactionalOutbox outbox, DataSource dataSource, String orders) {
      this.outbox = outbox;
      this.dataSource = dataSource;
      this.orders = orders;
    }

    @Transactional
    public void place(OutboxEvent event) {
      new org.springframework.jdbc.core.JdbcTemplate(dataSource)
          .update("INSERT INTO " + orders + " (id) VALUES (?)", event.aggregateId());
      outbox.append(event);
    }

    @Transactional
    public void placeAndFail(OutboxEvent event) {
      place(event);
      throw new IllegalStateException("payment refused");
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Orders {
    @Bean
    OrderService orderService(TransactionalOutbox outbox, DataSource dataSource, OutboxProperties properties) {
      String orders = properties.table() + "_orders";
      DB.execute("CREATE TABLE " + orders + " (id varchar(64) PRIMARY KEY)");
      return new OrderService(outbox, dataSource, orders);
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Wrapped {
    @Bean
    DispatchFn wrappedDispatch(RecordingDispatch publisher) {
      return publisher::dispatch;
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class PrimaryRecording {
    @Bean
    @org.springframework.context.annotation.Primary
    RecordingDispatch primaryDispatch() {
      return new RecordingDispatch();
    }
  }

  /** The application's transactions are those of another database than the outbox's. */
  @Configuration(proxyBeanMethods = false)
  static class OtherDatabase {
    @Bean
    org.springframework.transaction.PlatformTransactionManager otherTransactionManager() {
      return new org.springframework.jdbc.support.JdbcTransactionManager(DB.dataSource());
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnBeans {
    JdbcOutboxStore store;
    OutboxHealth health;
    AsyncOutboxDispatcher dispatcher;
    TransactionalOutbox outbox;

    @Bean
    JdbcOutboxStore ownStore(DataSource dataSource, OutboxProperties properties) {
      store = JdbcOutboxStore.builder().dataSource(dataSource).table(properties.table()).build();
      return store;
    }

    @Bean
    OutboxHealth ownHealth(JdbcOutboxStore store) {
      health = OutboxHealth.builder().store(store).build();
      return health;
    }

    @Bean
    AsyncOutboxDispatcher ownDispatcher(JdbcOutboxStore store, RecordingDispatch publish) {
      dispatcher = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publish).name("own").build();
      return dispatcher;
    }

    @Bean
    TransactionalOutbox ownOutbox(JdbcOutboxStore store, DataSource dataSource) {
      outbox = new TransactionalOutbox(store, dataSource);
      return outbox;
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class Meters {
    @Bean
    MeterRegistry meterRegistry() {
      return new SimpleMeterRegistry();
    }
  }

  @Configuration(proxyBeanMethods = false)
  @org.springframework.boot.context.properties.EnableConfigurationProperties(OutboxProperties.class)
  static class PropertiesOnly {}
}
