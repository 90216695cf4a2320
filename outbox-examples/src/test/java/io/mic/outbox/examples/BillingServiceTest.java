package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.api.AckPolicy;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.StreamConfiguration;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
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
 * The inbox → outbox chain on a real PostgreSQL and a real NATS JetStream: {@link BillingService} consumes
 * {@code order.created} and appends {@code invoice.issued} to its own outbox in the inbox's transaction. A
 * redelivered message is applied once and emits one event; a rollback emits none; an order that can never be
 * invoiced is parked and compensated once.
 */
class BillingServiceTest {
  private final String name = "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private HikariDataSource db;
  private io.nats.client.Connection nats;
  private JdbcOutboxStore orders;
  private JdbcOutboxStore billingOutbox;
  private JdbcInbox inbox;
  private BillingService billing;

  @BeforeEach
  void connect() throws Exception {
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(System.getenv().getOrDefault("MIC_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test"));
    config.setUsername(System.getenv().getOrDefault("MIC_TEST_POSTGRES_USER", "postgres"));
    config.setPassword(System.getenv().getOrDefault("MIC_TEST_POSTGRES_PASSWORD", ""));
    config.setMaximumPoolSize(3);
    try {
      db = new HikariDataSource(config);
      nats = Nats.connect(Options.builder().server(System.getenv().getOrDefault("MIC_TEST_NATS_URL",
          "nats://127.0.0.1:4222")).maxReconnects(0).build());
    } catch (Exception e) {
      Assumptions.assumeFalse("true".equalsIgnoreCase(System.getenv("CI")), "servers required under CI: " + e);
      Assumptions.abort("PostgreSQL or NATS unreachable: " + e);
    }
    nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(name).subjects(name + ".>").build());
    orders = JdbcOutboxStore.builder().dataSource(db).table(name + "_orders_outbox").build();
    orders.createSchema();
    billingOutbox = JdbcOutboxStore.builder().dataSource(db).table(name + "_billing_outbox").build();
    inbox = JdbcInbox.builder().dataSource(db).table(name + "_inbox").build();
    billing = new BillingService(db, inbox, billingOutbox, name + "_invoices", name + "_parked");
    billing.createSchema();
  }

  @AfterEach
  void close() throws Exception {
    if (nats != null) {
      nats.jetStreamManagement().deleteStream(name);
      nats.close();
    }
    if (db != null) {
      try (Connection c = db.getConnection(); Statement s = c.createStatement();
          ResultSet rs = s.executeQuery("SELECT tablename FROM pg_tables WHERE tablename LIKE '" + name + "%'")) {
        List<String> tables = new ArrayList<>();
        while (rs.next()) {
          tables.add(rs.getString(1));
        }
        for (String t : tables) {
          s.execute("DROP TABLE IF EXISTS " + t + " CASCADE");
        }
      }
      db.close();
    }
  }

  @Test
  void aRedeliveredOrderIsInvoicedOnceAndEmitsExactlyOneInvoiceIssued() throws Exception {
    try (NatsJetStreamPublisher publisher = publisher()) {
      try (Connection c = db.getConnection()) { // the order service: its order and its event, one transaction
        c.setAutoCommit(false);
        orders.append(c, orderCreated("42", 1250));
        c.commit();
      }
      assertThat(OutboxDispatcher.builder().store(orders).dispatchFn(publisher).build().dispatchOnce().dispatched())
          .isEqualTo(1);
      JetStreamSubscription orderCreated = subscribe("order.created");

      Message first = next(orderCreated);
      assertThat(billing.onOrderCreated(eventId(first), payload(first))).isTrue();
      // billing dies before its ack: JetStream delivers the message again once the ack wait is over
      Message second = next(orderCreated);
      assertThat(second.metaData().deliveredCount()).isEqualTo(2);
      assertThat(eventId(second)).isEqualTo(eventId(first));
      assertThat(billing.onOrderCreated(eventId(second), payload(second))).isFalse();
      second.ack();

      assertThat(count(name + "_invoices")).isEqualTo(1);
      assertThat(topicsIn(name + "_billing_outbox")).containsExactly("invoice.issued");
      assertThat(OutboxDispatcher.builder().store(billingOutbox).dispatchFn(publisher).build().dispatchOnce()
          .dispatched()).isEqualTo(1);
    }
    List<Message> issued = subscribe("invoice.issued", AckPolicy.None).fetch(10, Duration.ofSeconds(2));
    assertThat(issued).hasSize(1);
    assertThat(payload(issued.get(0))).isEqualTo("{\"orderId\":\"42\",\"amountCents\":1250}");
  }

  @Test
  void anEffectRolledBackEmitsNothingAndTheRedeliveryAppliesIt() throws Exception {
    try (NatsJetStreamPublisher publisher = publisher()) {
      publisher.dispatch(orderCreated("43", 990));
    }
    JetStreamSubscription orderCreated = subscribe("order.created");
    Message first = next(orderCreated);
    String id = eventId(first);
    // the invoice is written and invoice.issued appended, then the transaction fails before its commit
    assertThatThrownBy(() -> inbox.runOnce("billing", id, tx -> {
      billing.effectOf(id, payload(first)).apply(tx);
      throw new IllegalStateException("lost the database before the commit");
    })).isInstanceOf(IllegalStateException.class);
    first.nak();
    assertThat(count(name + "_invoices")).isZero();
    assertThat(topicsIn(name + "_billing_outbox")).isEmpty();
    assertThat(inbox.recordedEventIds("billing")).isEmpty();

    Message again = next(orderCreated);
    assertThat(eventId(again)).isEqualTo(id);
    assertThat(billing.onOrderCreated(id, payload(again))).isTrue();
    again.ack();
    assertThat(count(name + "_invoices")).isEqualTo(1);
    assertThat(topicsIn(name + "_billing_outbox")).containsExactly("invoice.issued");
    assertThat(inbox.recordedEventIds("billing")).containsExactly(id);
  }

  @Test
  void anOrderThatCanNeverBeInvoicedIsParkedAndCompensatedOnce() throws Exception {
    String free = UUID.randomUUID().toString();
    String unreadable = UUID.randomUUID().toString();
    assertThat(billing.onOrderCreated(free, "{\"orderId\":\"44\",\"amountCents\":0}")).isTrue();
    assertThat(billing.onOrderCreated(free, "{\"orderId\":\"44\",\"amountCents\":0}")).isFalse(); // redelivered
    assertThat(billing.onOrderCreated(unreadable, "{\"orderId\":")).isTrue();

    assertThat(billing.parkedMessages()).isEqualTo(2);
    assertThat(count(name + "_invoices")).isZero();
    assertThat(topicsIn(name + "_billing_outbox")).containsExactly("invoice.rejected", "invoice.rejected");
    try (Connection c = db.getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(
        "SELECT event_id, reason FROM " + name + "_parked ORDER BY reason")) {
      Map<String, String> reasons = new HashMap<>();
      while (rs.next()) {
        reasons.put(rs.getString(1), rs.getString(2));
      }
      assertThat(reasons).containsOnly(Map.entry(free, "amountCents must be > 0, was 0"),
          Map.entry(unreadable, "order.created payload is not valid JSON (JsonEOFException)"));
    }
  }

  private NatsJetStreamPublisher publisher() {
    return NatsJetStreamPublisher.builder().connection(nats).subjectPrefix(name).build();
  }

  private static OutboxEvent orderCreated(String orderId, long amountCents) {
    return OutboxEvent.builder().aggregate("order", orderId).topic("order.created")
        .payload("{\"orderId\":\"" + orderId + "\",\"amountCents\":" + amountCents + "}").build();
  }

  private JetStreamSubscription subscribe(String topic) throws Exception {
    return subscribe(topic, AckPolicy.Explicit);
  }

  /** A pull consumer from the stream's start; explicit acks come back after 1 s without one. */
  private JetStreamSubscription subscribe(String topic, AckPolicy acks) throws Exception {
    return nats.jetStream().subscribe(name + "." + topic, PullSubscribeOptions.builder().configuration(
        ConsumerConfiguration.builder().ackPolicy(acks).ackWait(Duration.ofSeconds(1)).build()).build());
  }

  private static Message next(JetStreamSubscription sub) {
    List<Message> got = sub.fetch(1, Duration.ofSeconds(5));
    assertThat(got).hasSize(1);
    return got.get(0);
  }

  private static String eventId(Message m) {
    Map<String, String> headers = new HashMap<>();
    m.getHeaders().forEach((k, v) -> headers.put(k, v.get(0)));
    return JdbcInbox.eventIdOf(headers);
  }

  private static String payload(Message m) {
    return new String(m.getData(), StandardCharsets.UTF_8);
  }

  private long count(String table) throws Exception {
    try (Connection c = db.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table)) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private List<String> topicsIn(String outboxTable) throws Exception {
    List<String> topics = new ArrayList<>();
    try (Connection c = db.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT topic FROM " + outboxTable + " ORDER BY created_at, id")) {
      while (rs.next()) {
        topics.add(rs.getString(1));
      }
    }
    return topics;
  }
}
