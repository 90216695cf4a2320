package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class OutboxDemoTest {
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  private int run(String... args) {
    return OutboxDemo.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
  }

  private String out() {
    return out.toString(StandardCharsets.UTF_8);
  }

  private String err() {
    return err.toString(StandardCharsets.UTF_8);
  }

  @Test
  void tellsTheWholeStoryOnTheEmbeddedDefault() {
    assertThat(run()).as(err()).isZero();
    assertThat(out())
        .contains("MIC Outbox demo on H2, publishing to an in-process bus")
        .contains("3 orders placed and paid: 3 order rows and 6 events")
        .contains("order o-4 failed before commit: still 3 order rows and 6 events")
        .contains("o-1: order.placed -> order.paid")
        .contains("billing's inbox absorbed 1 duplicate(s): 6 invoice rows for 6 events")
        .contains("moved to the DLQ: [o-5 (java.lang.IllegalArgumentException: schema check: amount must not be negative)]")
        .contains("1 event redriven and dispatched: o-5: order.placed")
        .contains("Summary: 7 events written, 7 dispatched, 2 retried, 1 dead-lettered and redriven, 1 duplicate"
            + " absorbed, 0 in the DLQ, 0 lost");
  }

  /** The same story on a real PostgreSQL (MIC_TEST_POSTGRES_URL, else the local server). */
  @Test
  void tellsTheSameStoryOnPostgresql() {
    String url = System.getenv().getOrDefault("MIC_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test");
    String user = System.getenv().getOrDefault("MIC_TEST_POSTGRES_USER", "postgres");
    String password = System.getenv().getOrDefault("MIC_TEST_POSTGRES_PASSWORD", "");
    int code = run("--jdbc-url", url, "--jdbc-user", user, "--jdbc-password=" + password);
    if (code == 2 && !"true".equalsIgnoreCase(System.getenv("CI"))) {
      org.junit.jupiter.api.Assumptions.abort("PostgreSQL unreachable: " + err());
    }
    assertThat(code).as(err()).isZero();
    assertThat(out()).contains("MIC Outbox demo on PostgreSQL")
        .contains("Summary: 7 events written, 7 dispatched, 2 retried, 1 dead-lettered and redriven");
  }

  /** The same story through NATS JetStream (MIC_TEST_NATS_URL, else the local server). */
  @Test
  void tellsTheSameStoryThroughNatsJetStream() {
    String url = System.getenv().getOrDefault("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");
    int code = run("--nats", url);
    if (code == 2 && !"true".equalsIgnoreCase(System.getenv("CI"))) {
      org.junit.jupiter.api.Assumptions.abort("NATS unreachable: " + err());
    }
    assertThat(code).as(err()).isZero();
    assertThat(out()).contains("publishing to NATS JetStream (stream MIC_DEMO_")
        .contains("o-1's order.placed was delivered twice; billing's inbox absorbed 1 duplicate(s)")
        .contains("Summary: 7 events written, 7 dispatched, 2 retried, 1 dead-lettered and redriven");
  }

  /** The same story through Apache Kafka (MIC_TEST_KAFKA_BOOTSTRAP, else a broker started for the tests). */
  @Test
  void tellsTheSameStoryThroughKafka() {
    int code = run("--kafka", io.mic.outbox.kafka.KafkaTestBroker.bootstrap());
    assertThat(code).as(err() + out()).isZero();
    assertThat(out()).contains("publishing to Apache Kafka (topic mic-demo-")
        .contains("o-1: order.placed -> order.paid")
        .contains("o-1's order.placed was delivered twice; billing's inbox absorbed 1 duplicate(s)")
        .contains("Summary: 7 events written, 7 dispatched, 2 retried, 1 dead-lettered and redriven, 1 duplicate"
            + " absorbed, 0 in the DLQ, 0 lost");
  }

  /**
   * The same story through RabbitMQ (MIC_TEST_RABBITMQ_URI, else the local server); the demo's exchange and
   * queue are gone afterwards.
   */
  @Test
  void tellsTheSameStoryThroughRabbitMq() throws Exception {
    String uri = System.getenv().getOrDefault("MIC_TEST_RABBITMQ_URI", "amqp://guest:guest@127.0.0.1:5672");
    int code = run("--rabbitmq", uri);
    if (code == 2 && !"true".equalsIgnoreCase(System.getenv("CI"))) {
      org.junit.jupiter.api.Assumptions.abort("RabbitMQ unreachable: " + err());
    }
    assertThat(code).as(err() + out()).isZero();
    assertThat(out()).contains("publishing to RabbitMQ (exchange and queue mic-demo-")
        .contains("o-1: order.placed -> order.paid")
        .contains("o-1's order.placed was delivered twice; billing's inbox absorbed 1 duplicate(s)")
        .contains("Summary: 7 events written, 7 dispatched, 2 retried, 1 dead-lettered and redriven, 1 duplicate"
            + " absorbed, 0 in the DLQ, 0 lost");
    java.util.regex.Matcher name = java.util.regex.Pattern.compile("mic-demo-[0-9a-f]{8}").matcher(out());
    assertThat(name.find()).isTrue();
    com.rabbitmq.client.ConnectionFactory factory = new com.rabbitmq.client.ConnectionFactory();
    factory.setUri(uri);
    try (com.rabbitmq.client.Connection c = factory.newConnection()) {
      // a passive declare of something missing closes the channel with 404 NOT_FOUND
      assertThatThrownBy(() -> c.createChannel().queueDeclarePassive(name.group()))
          .hasStackTraceContaining("NOT_FOUND - no queue '" + name.group() + "'");
      assertThatThrownBy(() -> c.createChannel().exchangeDeclarePassive(name.group()))
          .hasStackTraceContaining("NOT_FOUND - no exchange '" + name.group() + "'");
    }
  }

  @Test
  void natsAndKafkaTogetherAreExitCodeTwo() {
    assertThat(run("--nats", "nats://127.0.0.1:4222", "--kafka", "127.0.0.1:9092")).isEqualTo(2);
    assertThat(err()).contains("--nats, --kafka and --rabbitmq exclude each other");
  }

  @Test
  void aRabbitMqPasswordNeverReachesTheOutput() {
    int unreachable = run("--rabbitmq", "amqp://demo:" + SECRET + "@127.0.0.1:1");
    int notAmqp = run("--rabbitmq", "http://demo:" + SECRET + "@127.0.0.1:5672");
    // a port that is not a number: the client alone would fall back to localhost:5672 as guest
    int badPort = run("--rabbitmq", "amqp://demo:" + SECRET + "@127.0.0.1:56x2");

    assertThat(List.of(unreachable, notAmqp, badPort)).containsExactly(2, 2, 2);
    assertThat(err()).contains("cannot use RabbitMQ at amqp://***@127.0.0.1:1 (")
        .contains("--rabbitmq must be an AMQP URI such as amqp://guest:guest@127.0.0.1:5672, was"
            + " 'http://***@127.0.0.1:5672'")
        .contains("--rabbitmq: uri 'amqp://***@127.0.0.1:56x2' is not an AMQP URI");
    assertThat(out()).doesNotContain("MIC Outbox demo on");
    assertThat(err() + out()).doesNotContain(SECRET);
  }

  @Test
  void unreachableNatsIsExitCodeTwo() {
    assertThat(run("--nats", "nats://127.0.0.1:1")).isEqualTo(2);
    assertThat(err()).contains("cannot use NATS JetStream at nats://127.0.0.1:1");
  }

  @Test
  void unknownOptionIsExitCodeTwoNamingIt() {
    assertThat(run("--jdbc-ulr", "x")).isEqualTo(2);
    assertThat(err()).contains("Unknown options: '--jdbc-ulr'").contains("Possible solutions: --jdbc-url");
  }

  @Test
  void unreachableDatabaseIsExitCodeTwoWithTheUrl() {
    assertThat(run("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere")).isEqualTo(2);
    assertThat(err()).contains("cannot connect to jdbc:postgresql://127.0.0.1:1/nowhere");
  }

  @Test
  void urlThatIsNotJdbcIsRejected() {
    assertThat(run("--jdbc-url", "postgres://localhost/db")).isEqualTo(2);
    assertThat(err()).contains("--jdbc-url must be a JDBC URL");
  }

  @Test
  void helpListsTheOptionsAndExitCodes() {
    assertThat(run("--help")).isZero();
    assertThat(out()).contains("--jdbc-url").contains("Exit codes:").contains("2   bad options");
  }

  private static final String SECRET = "s3cret-Xq7";

  @Test
  void aJdbcPasswordNeverReachesTheOutput() {
    int inUrl = run("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere?user=demo&password=" + SECRET + "&ssl=false");
    int asOption = run("--jdbc-url", "jdbc:postgresql://127.0.0.1:1/nowhere", "--jdbc-password", SECRET);
    int mariaDb = run("--jdbc-url", "jdbc:mariadb://demo:" + SECRET + "@127.0.0.1:1/nowhere");
    int notJdbc = run("--jdbc-url", "postgres://demo:" + SECRET + "@localhost/db");

    assertThat(List.of(inUrl, asOption, mariaDb, notJdbc)).containsExactly(2, 2, 2, 2);
    assertThat(err()).contains("cannot connect to jdbc:postgresql://127.0.0.1:1/nowhere?user=demo&password=***"
        + "&ssl=false: ").contains("cannot connect to jdbc:mariadb://***@127.0.0.1:1/nowhere: ")
        .contains("--jdbc-url must be a JDBC URL such as jdbc:postgresql://127.0.0.1:5432/test, was"
            + " 'postgres://***@localhost/db'");
    assertThat(err() + out()).doesNotContain(SECRET);
  }

  @Test
  void aNatsPasswordNeverReachesTheOutput() {
    int unreachable = run("--nats", "nats://demo:" + SECRET + "@127.0.0.1:1");
    int notNats = run("--nats", "http://demo:" + SECRET + "@127.0.0.1:4222");

    assertThat(List.of(unreachable, notNats)).containsExactly(2, 2);
    assertThat(err()).contains("cannot use NATS JetStream at nats://***@127.0.0.1:1 (")
        .contains("--nats must be a NATS URL such as nats://127.0.0.1:4222, was 'http://***@127.0.0.1:4222'");
    assertThat(err() + out()).doesNotContain(SECRET);
  }
}
