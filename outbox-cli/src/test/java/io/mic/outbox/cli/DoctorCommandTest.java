package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.ConnectionFactory;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxControl;
import io.mic.outbox.test.OutboxTestDatabase;
import io.nats.client.Connection;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import java.net.URI;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code doctor} on PostgreSQL, the shared NATS server and RabbitMQ: each finding provoked for real (a dead
 * letter, a pause, a missing index, a newer schema version, a transaction held open, a subject no stream
 * captures, an exchange that does not exist), its line, its JSON and the exit code.
 */
class DoctorCommandTest {
  private static final String NATS = System.getenv().getOrDefault("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");
  private static final String RABBITMQ = System.getenv().getOrDefault("MIC_TEST_RABBITMQ_URI",
      "amqp://guest:guest@127.0.0.1:5672");
  private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final OutboxTestDatabase postgres = OutboxTestDatabase.postgres();
  private final String table = postgres.newTable();
  private final String captured = "dr" + suffix + ".captured";
  private final String uncaptured = "dr" + suffix + ".nowhere";
  private final String stream = "DR_" + suffix;
  private Database db;
  private JdbcOutboxStore store;

  @BeforeEach
  void connect() {
    db = Database.connect(postgres.url(), postgres.user(), postgres.password(), table);
    store = db.store();
    store.createSchema();
  }

  @AfterEach
  void cleanUp() {
    if (db != null) {
      postgres.dropStore(table);
    }
  }

  private Run doctor(String... args) {
    String[] all = new String[args.length + 1];
    all[0] = "doctor";
    System.arraycopy(args, 0, all, 1, args.length);
    return Run.on(postgres, table, all);
  }

  private static String line(Run run, String check) {
    return Arrays.stream(run.stdout().split("\n")).filter(l -> l.matches("\\S+ +" + java.util.regex.Pattern.quote(check)
        + " .*")).findFirst().orElseThrow(() -> new AssertionError("no line for " + check + " in:\n" + run.stdout()));
  }

  private OutboxEvent append(String topic, String aggregateId) throws SQLException {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload("{}").build();
    try (java.sql.Connection c = db.dataSource().getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
    }
    return e;
  }

  @Test
  void eachFindingIsOneLineWithItsFigureAndRemedyAndTheExitCodeSaysWhetherAnyWarns() throws SQLException {
    append("order.created", "o-1");
    store.markDead(store.claim("w", 1, Duration.ofMinutes(1), false).get(0), "broker said no");
    OutboxControl.builder().store(store).build().pause("billing.issued", "deploy\n\u001b[31mred");

    Run run = doctor();

    assertThat(run.exitCode()).as(run.stderr()).isEqualTo(MicOutbox.CHECK_FAILED);
    assertThat(line(run, "schema-version")).matches("PASS +schema-version +version "
        + JdbcOutboxStore.SCHEMA_VERSION + ", as this MIC Outbox");
    assertThat(line(run, "indexes")).startsWith("PASS");
    assertThat(line(run, "dead-letters")).matches("WARN +dead-letters +1 dead letter\\(s\\), the oldest created .*"
        + " ago -> mic-outbox dlq list; fix the cause, then dlq redrive or dlq purge");
    assertThat(line(run, "pauses")).startsWith("WARN").endsWith(": deploy\\u000a\\u001b[31mred -> mic-outbox resume"
        + " --topic billing.issued once the reason is resolved");
    assertThat(line(run, "held-aggregates")).matches("PASS +held-aggregates +no aggregate waits behind a dead letter");
    assertThat(line(run, "partitions")).startsWith("N/A ");
    assertThat(run.stdout()).endsWith(" not applicable\n");

    OutboxControl.builder().store(store).build().resume("billing.issued");
    postgres.execute("DELETE FROM " + table);
    Run clean = doctor("--max-transaction-age", "1h");
    assertThat(line(clean, "dead-letters")).startsWith("PASS");
    assertThat(line(clean, "pauses")).startsWith("PASS");
    // what the shared server decides (autovacuum, others' transactions) may still warn: exit 1 exactly then
    boolean anyFinding = clean.stdout().lines().anyMatch(l -> l.startsWith("WARN") || l.startsWith("FAIL"));
    assertThat(clean.exitCode()).as(clean.stdout()).isEqualTo(anyFinding ? MicOutbox.CHECK_FAILED : MicOutbox.OK);
  }

  @Test
  void jsonIsOneDocumentWithEveryCheck() {
    postgres.execute("DROP INDEX " + table + "_claim_idx");

    Run run = doctor("--json");

    assertThat(run.exitCode()).isEqualTo(MicOutbox.CHECK_FAILED);
    assertThat(run.stdout().strip().lines()).hasSize(1);
    assertThat(run.stdout()).startsWith("{\"table\":\"" + table + "\",\"database\":\"PostgreSQL\",\"checks\":[")
        .contains("{\"name\":\"indexes\",\"verdict\":\"FAIL\",\"figure\":\"missing: index " + table + "_claim_idx\","
            + "\"remedy\":\"run createSchema() once as the schema's owner, or run: CREATE INDEX IF NOT EXISTS \\\""
            + table + "_claim_idx\\\"")
        .contains("{\"name\":\"held-aggregates\",\"verdict\":\"PASS\"")
        .contains("{\"name\":\"partitions\",\"verdict\":\"NOT_APPLICABLE\"")
        .contains("\"summary\":{\"pass\":");
  }

  @Test
  void aNewerSchemaFailsAndAHeldTransactionWarns() throws Exception {
    postgres.execute("UPDATE " + table + "_control SET tables_version = 99 WHERE topic = '#schema'");
    try (java.sql.Connection held = db.dataSource().getConnection()) {
      held.setAutoCommit(false);
      store.append(held, OutboxEvent.builder().aggregate("order", "o-1").topic("order.created").payload("{}").build());
      Run run = org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(10))
          .until(() -> doctor("--max-transaction-age", "1s"), r -> line(r, "oldest-transaction").startsWith("WARN"));

      assertThat(run.exitCode()).isEqualTo(MicOutbox.CHECK_FAILED);
      assertThat(line(run, "schema-version")).isEqualTo("FAIL schema-version      version 99, newer than version "
          + JdbcOutboxStore.SCHEMA_VERSION + " of this MIC Outbox: its stores dispatch nothing from these tables ->"
          + " run the application and mic-outbox with the MIC Outbox that upgraded the tables (or a later one)");
      assertThat(line(run, "oldest-transaction")).startsWith("WARN").contains("holds the xmin horizon (session pid ")
          .contains(" -> end it: SELECT pg_terminate_backend(");
      held.rollback();
    }
  }

  @Test
  void natsTakesATopicOnlyWhenAStreamCapturesItsSubject() throws Exception {
    append(captured, "o-1");
    append(uncaptured, "o-2");
    try (Connection nats = Nats.connect(NATS)) {
      nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(captured)
          .storageType(StorageType.Memory).build());
      try {
        Run run = doctor("--nats", NATS);

        assertThat(line(run, "nats:" + captured)).startsWith("PASS").contains("1 live event(s); ");
        assertThat(line(run, "nats:" + uncaptured)).startsWith("FAIL").contains("1 live event(s) that ")
            .contains("no JetStream stream captures subject '" + uncaptured + "': create one, e.g. 'nats stream add");
        assertThat(run.exitCode()).isEqualTo(MicOutbox.CHECK_FAILED);
      } finally {
        nats.jetStreamManagement().deleteStream(stream);
      }
    }
  }

  @Test
  void aBrokerThatDoesNotAnswerIsOneFailure() throws Exception {
    append(captured, "o-1");
    append(uncaptured, "o-2");

    Run run = doctor("--nats", "nats://127.0.0.1:1");

    assertThat(line(run, "nats")).startsWith("FAIL").contains("127.0.0.1:1");
    assertThat(run.stdout()).doesNotContain("nats:" + captured, "nats:" + uncaptured);
    assertThat(run.exitCode()).isEqualTo(MicOutbox.CHECK_FAILED);
  }

  @Test
  void rabbitMqTakesTheTopicsOnlyWhenTheExchangeExists() throws Exception {
    append(captured, "o-1");
    String exchange = "dr-" + suffix;
    ConnectionFactory factory = new ConnectionFactory();
    factory.setUri(RABBITMQ);
    try (com.rabbitmq.client.Connection rabbit = factory.newConnection(); Channel channel = rabbit.createChannel()) {
      channel.exchangeDeclare(exchange, "topic", false, true, null);

      Run exists = doctor("--rabbitmq", RABBITMQ, "--rabbitmq-exchange", exchange);
      Run missing = doctor("--rabbitmq", RABBITMQ, "--rabbitmq-exchange", exchange + "-missing");

      assertThat(line(exists, "rabbitmq:" + captured)).startsWith("PASS");
      assertThat(line(missing, "rabbitmq:" + captured)).startsWith("FAIL").contains("exchange '" + exchange
          + "-missing' does not exist at amqp://***@").contains("declare it, or name an existing exchange");
      assertThat(missing.stdout()).doesNotContain("guest:guest");
      URI live = URI.create(RABBITMQ);
      Run cluster = doctor("--rabbitmq", live.getScheme() + "://" + live.getRawUserInfo() + "@127.0.0.1:1",
          "--rabbitmq-addresses", "127.0.0.1:1," + live.getHost() + ":" + live.getPort(), "--rabbitmq-exchange",
          exchange);
      assertThat(line(cluster, "rabbitmq:" + captured)).as("the first node that accepts").startsWith("PASS");
      channel.exchangeDelete(exchange);
    }
  }

  @Test
  void badArgumentsAndAnUnreachableDatabaseExitTwo() {
    assertThat(doctor("--rabbitmq", RABBITMQ).exitCode()).isEqualTo(MicOutbox.BAD_INPUT);
    assertThat(doctor("--rabbitmq-addresses", "127.0.0.1:5672").exitCode()).isEqualTo(MicOutbox.BAD_INPUT);
    assertThat(doctor("--max-lag", "0s").exitCode()).isEqualTo(MicOutbox.BAD_INPUT);
    Run unreachable = Run.of(Map.of(), "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/test", "doctor");
    assertThat(unreachable.exitCode()).isEqualTo(MicOutbox.BAD_INPUT);
    assertThat(unreachable.stderr()).startsWith("mic-outbox: cannot connect to jdbc:postgresql://127.0.0.1:1/test");
    assertThat(List.of(unreachable.stdout())).containsExactly("");
  }
}
