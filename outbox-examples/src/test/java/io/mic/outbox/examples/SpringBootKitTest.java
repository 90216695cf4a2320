package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.spring.TransactionalOutbox;
import io.mic.outbox.test.FaultyPublisher;
import io.mic.outbox.test.OutboxTestDatabase;
import io.mic.outbox.test.OutboxTesting;
import io.mic.outbox.test.RecordingDispatchFn;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.Primary;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The Spring Boot test recipe of docs/testing.md, run as written: a {@code @SpringBootTest} on a fresh outbox
 * table, the application's publisher replaced by the kit's, a dead letter awaited.
 */
// docs/testing.md 3 begin
@SpringBootTest(classes = SpringBootKitTest.ShopApplication.class,
    properties = {"mic.outbox.max-attempts=3", "mic.outbox.retry.initial-delay=10ms"})
@Import(SpringBootKitTest.RefusingPublisher.class)        // replaces the application's publisher
@DirtiesContext                                           // closes the context after the class
class SpringBootKitTest {
  static final OutboxTestDatabase DB = OutboxTestDatabase.postgres();
  static final String TABLE = DB.newTable();              // or DB.newTable("shop_test_")

  @DynamicPropertySource
  static void database(DynamicPropertyRegistry registry) {
    registry.add("spring.datasource.url", DB::url);
    registry.add("spring.datasource.username", DB::user);
    registry.add("spring.datasource.password", DB::password);
    registry.add("mic.outbox.table", () -> TABLE);
    registry.add("mic.outbox.create-schema", () -> "true");
  }

  @TestConfiguration
  static class RefusingPublisher {
    @Bean
    @Primary                                              // wins over the application's own DispatchFn bean
    FaultyPublisher publisher() {
      return FaultyPublisher.failingTimes(1_000, new RecordingDispatchFn());   // always refuses
    }

    @Bean
    AutoCloseable dropTable() {                           // at context close, once the dispatcher has stopped
      return () -> DB.dropStore(TABLE);
    }
  }

  @Autowired TransactionalOutbox outbox;
  @Autowired TransactionTemplate tx;
  @Autowired JdbcOutboxStore store;

  @Test
  void anEventThePublisherAlwaysRefusesIsDeadLetteredAfterMaxAttempts() throws InterruptedException {
    OutboxEvent event = OutboxEvent.builder().aggregate("order", "42").topic("order.created").payload("{}").build();
    tx.executeWithoutResult(status -> outbox.append(event));

    List<OutboxEvent> dead = OutboxTesting.awaitDeadLettered(store, Duration.ofSeconds(30), event.id());
    assertThat(dead.get(0).attempts()).isEqualTo(3);
  }
  // docs/testing.md 3 end

  /** The application under test: here just Spring Boot's auto-configuration. */
  @SpringBootConfiguration
  @EnableAutoConfiguration
  static class ShopApplication {}
}
