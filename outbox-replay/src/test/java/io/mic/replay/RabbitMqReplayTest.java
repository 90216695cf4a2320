package io.mic.replay;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;

import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.GetResponse;
import java.io.IOException;
import java.nio.file.Files;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The command publishing to a real RabbitMQ broker. */
class RabbitMqReplayTest {
  @TempDir
  Path dir;
  private Connection rabbit;
  private Channel admin;
  private String exchange;
  private String queue;
  private String topic;

  @BeforeEach
  void connect() throws Exception {
    rabbit = TestServices.rabbit();
    admin = rabbit.createChannel();
    exchange = "mic-replay-" + TestServices.uniqueName();
    queue = exchange + "-q";
    topic = TestServices.uniqueName() + ".order.created";
    admin.queueDeclare(queue, false, false, false, null);
  }

  @AfterEach
  void cleanUp() throws Exception {
    admin.queueDelete(queue);
    admin.exchangeDelete(exchange);
    rabbit.close();
  }

  private String record(String id, String createdAt, String topicOfRecord) {
    return "{\"id\":\"" + id + "\",\"topic\":\"" + topicOfRecord + "\",\"aggregate_type\":\"order\","
        + "\"aggregate_id\":\"42\",\"created_at\":\"" + createdAt + "\",\"payload\":{\"n\":\"" + id + "\"},"
        + "\"headers\":{\"tenant\":\"acme\",\"label\":\"" + id + "\",\"x-replay\":\"forged\"}}";
  }

  private Path archive(String... lines) throws IOException {
    Path file = dir.resolve("archive.jsonl");
    Files.writeString(file, String.join("\n", lines) + "\n", UTF_8);
    return file;
  }

  private Cli replay(Path archive, String uri, String exchangeName, String batchId) {
    return Cli.run("--from-json", archive.toString(), "--topic", topic, "--from", "2026-09-29T08:00:00Z",
        "--to", "2026-09-29T10:00:00Z", "--to-rabbitmq", uri, "--rabbitmq-exchange", exchangeName,
        "--batch-id", batchId);
  }

  private List<GetResponse> drain() throws IOException {
    List<GetResponse> got = new ArrayList<>();
    for (GetResponse r = admin.basicGet(queue, true); r != null; r = admin.basicGet(queue, true)) {
      got.add(r);
    }
    return got;
  }

  private static Map<String, String> headersOf(GetResponse r) {
    Map<String, String> headers = new LinkedHashMap<>();
    r.getProps().getHeaders().forEach((name, value) -> headers.put(name, value.toString()));
    return headers;
  }

  /**
   * Binds the queue for exactly these events on a headers exchange (on their own {@code label} header: the
   * broker ignores {@code x-} headers when it matches): every other event is unroutable.
   */
  private void bindIds(String... ids) throws IOException {
    for (String id : ids) {
      admin.queueBind(queue, exchange, "", Map.of("x-match", "all", "label", id));
    }
  }

  @Test
  void replaysToABoundQueueInOrderWithTheReplayHeadersAndMessageIds() throws Exception {
    admin.exchangeDeclare(exchange, "topic", false);
    admin.queueBind(queue, exchange, topic);
    Path file = archive(record("e3", "2026-09-29T09:00:00Z", topic), record("e1", "2026-09-29T08:00:01Z", topic),
        record("other", "2026-09-29T08:30:00Z", topic + ".other"), record("e2", "2026-09-29T08:00:01Z", topic),
        record("late", "2026-09-29T10:00:00.001Z", topic));

    Cli cli = replay(file, TestServices.rabbitUri(), exchange, "b-1");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(0);
    assertThat(cli.stderr()).contains("published 3 events to RabbitMQ exchange " + exchange + " at amqp://***@")
        .doesNotContain("guest:guest");
    List<GetResponse> got = drain();
    assertThat(got).extracting(r -> r.getProps().getMessageId())
        .containsExactly("e1:replay:b-1", "e2:replay:b-1", "e3:replay:b-1");
    assertThat(got).extracting(r -> new String(r.getBody(), UTF_8))
        .containsExactly("{\"n\":\"e1\"}", "{\"n\":\"e2\"}", "{\"n\":\"e3\"}");
    assertThat(got).extracting(r -> r.getEnvelope().getRoutingKey()).containsOnly(topic);
    GetResponse first = got.get(0);
    // an AMQP field table keeps no order: the set of headers is exact, a forged x-replay is replaced
    assertThat(headersOf(first)).isEqualTo(Map.of("tenant", "acme", "label", "e1", "x-replay", "true",
        "x-replay-batch-id", "b-1", "x-original-event-id", "e1", "x-aggregate-type", "order", "x-aggregate-id", "42"));
    assertThat(first.getProps().getContentType()).isEqualTo("application/json");
    assertThat(first.getProps().getDeliveryMode()).isEqualTo(2);
    assertThat(first.getProps().getTimestamp()).isEqualTo(Date.from(java.time.Instant.parse("2026-09-29T08:00:01Z")));
  }

  @Test
  void aMissingExchangeIsABadArgumentAndNothingIsPublished() throws Exception {
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", topic));

    Cli cli = replay(file, TestServices.rabbitUri(), exchange, "b-1");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stderr()).startsWith("mic-events-replay: --rabbitmq-exchange: exchange '" + exchange
        + "' does not exist at amqp://***@").contains("declare it").doesNotContain("guest:guest");
    assertThat(cli.stderr().lines()).hasSize(1);
  }

  @Test
  void anUnroutableEventStopsTheBatchAndAResumedBatchSendsTheSameMessageIds() throws Exception {
    admin.exchangeDeclare(exchange, "headers", false);
    bindIds("e1", "e2"); // e3 and e4 are returned as unroutable
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", topic), record("e2", "2026-09-29T08:00:02Z", topic),
        record("e3", "2026-09-29T08:00:03Z", topic), record("e4", "2026-09-29T08:00:04Z", topic));

    Cli failed = replay(file, TestServices.rabbitUri(), exchange, "b-resume");

    assertThat(failed.exitCode()).as(failed.stderr()).isEqualTo(1);
    assertThat(failed.stderr()).contains("RabbitMQ returned event e3 to exchange '"
        + exchange + "'").contains("as unroutable (312 NO_ROUTE)")
        .contains("published 2 events in order before it; first unpublished event: e3 (created_at"
            + " 2026-09-29T08:00:03.000Z)")
        .contains("to resume, run the same command with --batch-id b-resume");
    assertThat(drain()).extracting(r -> r.getProps().getMessageId())
        .containsExactly("e1:replay:b-resume", "e2:replay:b-resume");

    bindIds("e3", "e4");
    Cli resumed = replay(file, TestServices.rabbitUri(), exchange, "b-resume");

    assertThat(resumed.exitCode()).as(resumed.stderr()).isEqualTo(0);
    assertThat(resumed.stderr()).contains("published 4 events to RabbitMQ exchange " + exchange);
    // RabbitMQ does not deduplicate: the prefix comes again under the same message_id, for consumers to drop
    assertThat(drain()).extracting(r -> r.getProps().getMessageId()).containsExactly("e1:replay:b-resume",
        "e2:replay:b-resume", "e3:replay:b-resume", "e4:replay:b-resume");
  }

  @Test
  void aWrongPasswordIsAPublicationFailureThatNeverPrintsIt() throws Exception {
    admin.exchangeDeclare(exchange, "topic", false);
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", topic));
    String uri = TestServices.rabbitUri().replaceFirst("//([^:@/]*):[^@/]*@", "//$1:s3cr3t-pw@");

    Cli cli = replay(file, uri, exchange, "b-1");

    assertThat(cli.exitCode()).isEqualTo(1);
    assertThat(cli.stderr()).startsWith("mic-events-replay: publication failed: cannot connect to RabbitMQ at"
        + " amqp://***@").doesNotContain("s3cr3t").doesNotContain("resume");
    assertThat(cli.stdout()).isEmpty();
  }

  @Test
  void aMalformedUriIsABadArgumentThatNeverPrintsThePassword() throws Exception {
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", topic));

    Cli cli = replay(file, "amqp://user:s3cr3t-pw@127.0.0.1:notaport", exchange, "b-1");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stderr()).startsWith("mic-events-replay: --to-rabbitmq: uri 'amqp://***@127.0.0.1:notaport' is"
        + " not an AMQP URI").doesNotContain("s3cr3t");
  }

  @Test
  void anOriginalIdTooLongForAMessageIdIsRefusedBeforeAnythingIsPublished() throws Exception {
    admin.exchangeDeclare(exchange, "topic", false);
    admin.queueBind(queue, exchange, topic);
    String longId = "x".repeat(250);
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", topic), record(longId, "2026-09-29T08:00:02Z", topic));

    Cli cli = replay(file, TestServices.rabbitUri(), exchange, "b-1");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stderr()).startsWith("mic-events-replay: nothing was published: ").contains("line 2")
        .contains("event " + longId + " cannot go to RabbitMQ").contains("the message_id is 261 bytes of UTF-8,"
            + " over AMQP's 255");
    assertThat(drain()).isEmpty();
  }

  /** The nodes of --rabbitmq-addresses replace the URI's host and port: the first node that accepts is taken. */
  @Test
  void theNodesOfAClusterTakeThePlaceOfTheUrisHost() throws Exception {
    admin.exchangeDeclare(exchange, "topic", false);
    admin.queueBind(queue, exchange, topic);
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", topic));
    URI live = URI.create(TestServices.rabbitUri());
    String deadUri = live.getScheme() + "://" + live.getRawUserInfo() + "@127.0.0.1:1";
    String[] range = {"--from-json", file.toString(), "--topic", topic, "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T10:00:00Z", "--to-rabbitmq", deadUri, "--rabbitmq-exchange", exchange, "--batch-id", "b-1"};

    Cli cli = Cli.run(concat(range, "--rabbitmq-addresses", "127.0.0.1:1," + live.getHost() + ":" + live.getPort()));
    Cli bad = Cli.run(concat(range, "--rabbitmq-addresses", "amqp://127.0.0.1:5672"));
    Cli noUri = Cli.run("--from-json", file.toString(), "--topic", topic, "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T10:00:00Z", "--rabbitmq-addresses", "127.0.0.1:5672");

    assertThat(cli.exitCode()).as(cli.stderr()).isEqualTo(0);
    assertThat(drain()).extracting(r -> r.getProps().getMessageId()).containsExactly("e1:replay:b-1");
    assertThat(bad.exitCode()).isEqualTo(2);
    assertThat(bad.stderr()).startsWith("mic-events-replay: --rabbitmq-addresses: addresses must be host:port pairs");
    assertThat(noUri.exitCode()).isEqualTo(2);
    assertThat(noUri.stderr()).startsWith("mic-events-replay: --rabbitmq-addresses needs --to-rabbitmq URI");
  }

  @Test
  void rabbitMqOptionsGoTogetherAndExcludeTheOtherBrokers() throws Exception {
    Path file = archive(record("e1", "2026-09-29T08:00:01Z", topic));
    String[] base = {"--from-json", file.toString(), "--topic", topic, "--from", "2026-09-29T08:00:00Z", "--to",
        "2026-09-29T10:00:00Z"};

    Cli noExchange = Cli.run(concat(base, "--to-rabbitmq", TestServices.rabbitUri()));
    Cli noUri = Cli.run(concat(base, "--rabbitmq-exchange", exchange));
    Cli both = Cli.run(concat(base, "--to-rabbitmq", TestServices.rabbitUri(), "--rabbitmq-exchange", exchange,
        "--to-kafka", "127.0.0.1:9092"));

    assertThat(noExchange.exitCode()).isEqualTo(2);
    assertThat(noExchange.stderr()).startsWith("mic-events-replay: --rabbitmq-exchange is required with"
        + " --to-rabbitmq").doesNotContain("guest:guest");
    assertThat(noUri.exitCode()).isEqualTo(2);
    assertThat(noUri.stderr()).startsWith("mic-events-replay: --rabbitmq-exchange needs --to-rabbitmq URI");
    assertThat(both.exitCode()).isEqualTo(2);
    assertThat(both.stderr()).startsWith("mic-events-replay: --to-nats, --to-kafka and --to-rabbitmq exclude"
        + " each other");
  }

  private static String[] concat(String[] a, String... b) {
    String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, all, a.length, b.length);
    return all;
  }
}
