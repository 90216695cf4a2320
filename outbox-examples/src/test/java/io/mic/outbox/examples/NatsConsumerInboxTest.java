package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.DeliveryOutcome;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.nats.NatsConsumers;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.impl.NatsMessage;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link NatsConsumers} on a real JetStream with the inbox on a real PostgreSQL: a redelivered message has its
 * effect once, a failed effect is redelivered, a message without an event id is terminated.
 */
class NatsConsumerInboxTest {
  private final String name = "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private final AtomicInteger invoices = new AtomicInteger();
  private HikariDataSource db;
  private JdbcInbox inbox;
  private Connection nats;
  private JetStreamSubscription sub;

  @BeforeEach
  void connect() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(System.getenv().getOrDefault("MIC_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
    config.setUsername(System.getenv().getOrDefault("MIC_TEST_POSTGRES_USER", "postgres"));
    config.setPassword(System.getenv().getOrDefault("MIC_TEST_POSTGRES_PASSWORD", ""));
    config.setMaximumPoolSize(2);
    try {
      db = new HikariDataSource(config);
      nats = Nats.connect(Options.builder().server(System.getenv().getOrDefault("MIC_TEST_NATS_URL",
          "nats://127.0.0.1:4222")).maxReconnects(0).build());
    } catch (Exception e) {
      Assumptions.assumeFalse("true".equalsIgnoreCase(System.getenv("CI")), "servers required under CI: " + e);
      Assumptions.abort("PostgreSQL or NATS unreachable: " + e);
    }
    inbox = JdbcInbox.builder().dataSource(db).table(name + "_inbox").build();
    inbox.createSchema();
    nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(name).subjects(name + ".>").build());
    JetStream js = nats.jetStream();
    sub = js.subscribe(name + ".>", PullSubscribeOptions.builder().configuration(ConsumerConfiguration.builder()
        .ackPolicy(AckPolicy.Explicit).ackWait(Duration.ofSeconds(1)).build()).build());
  }

  @AfterEach
  void close() throws Exception {
    if (nats != null) {
      nats.jetStreamManagement().deleteStream(name);
      nats.close();
    }
    if (db != null) {
      try (java.sql.Connection c = db.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS " + name + "_inbox");
        s.execute("DROP TABLE IF EXISTS " + name + "_inbox_sequences");
      }
      db.close();
    }
  }

  @Test
  void aRedeliveredMessageIsAppliedOnceAndAFailedOneIsRedelivered() throws Exception {
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().url(nats.getConnectedUrl()).build()) {
      publisher.dispatch(OutboxEvent.builder().aggregate("order", "42").topic(name + ".created").payload("{}").build());
    }
    // first delivery: the effect fails, the message is nak-ed and comes back at once
    Message first = next();
    assertThat(NatsConsumers.handle(first, id -> { throw new IllegalStateException("db hiccup"); }))
        .isEqualTo(DeliveryOutcome.REDELIVERED);
    // second delivery: applied; the process "dies" before the ack, so JetStream delivers it a third time
    Message second = next();
    assertThat(second.metaData().deliveredCount()).isEqualTo(2);
    assertThat(inbox.runOnce("billing", NatsConsumers.idempotencyKey(second), tx -> invoices.incrementAndGet())).isTrue();
    Message third = next();
    assertThat(third.metaData().deliveredCount()).isEqualTo(3);
    assertThat(NatsConsumers.handle(third, id -> inbox.runOnce("billing", id, tx -> invoices.incrementAndGet())))
        .isEqualTo(DeliveryOutcome.DUPLICATE);

    assertThat(invoices).hasValue(1);
    assertThat(sub.fetch(1, Duration.ofMillis(1_500))).isEmpty(); // acked: never delivered again
  }

  @Test
  void aMessageWithoutAnEventIdIsTerminated() throws Exception {
    nats.jetStream().publish(NatsMessage.builder().subject(name + ".foreign").headers(new Headers().put("tenant", "a"))
        .data(new byte[] {'{', '}'}).build());
    Message foreign = next();
    assertThat(NatsConsumers.handle(foreign, id -> invoices.incrementAndGet() > 0))
        .isEqualTo(DeliveryOutcome.REJECTED);
    assertThatThrownBy(() -> NatsConsumers.idempotencyKey(foreign))
        .isInstanceOf(OutboxException.class)
        .hasMessage("the message on " + name + ".foreign carries no event id: expected header x-event-id (live)"
            + " or x-original-event-id (replay); headers present: [tenant]");
    assertThat(invoices).hasValue(0);
    assertThat(sub.fetch(1, Duration.ofMillis(1_500))).isEmpty(); // terminated, not redelivered
  }

  private Message next() {
    List<Message> got = sub.fetch(1, Duration.ofSeconds(5));
    assertThat(got).hasSize(1);
    return got.get(0);
  }
}
