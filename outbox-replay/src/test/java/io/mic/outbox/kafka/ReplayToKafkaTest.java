package io.mic.outbox.kafka;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.replay.EventReplay;
import io.mic.replay.JsonArchiveSource;
import io.mic.replay.PublisherSink;
import io.mic.replay.ReplayCommand;
import io.mic.replay.ReplayResult;
import io.mic.replay.ReplaySink;
import io.mic.replay.UnpublishableEventException;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code mic-events-replay --to-kafka} and a replay through a {@link KafkaPublisher}, end to end on a real broker. */
class ReplayToKafkaTest {
  private static final String ID_1 = "01925e6a-0000-7000-8000-000000000001";
  private static final String ID_2 = "01925e6a-0000-7000-8000-000000000002";
  private static final String ID_3 = "01925e6a-0000-7000-8000-000000000003";

  @TempDir
  Path dir;
  private String bootstrap;
  private String topic;
  private final ByteArrayOutputStream out = new ByteArrayOutputStream();
  private final ByteArrayOutputStream err = new ByteArrayOutputStream();

  @BeforeEach
  void setUp() {
    bootstrap = KafkaTestBroker.bootstrap();
    topic = KafkaTestBroker.uniqueTopic();
  }

  @AfterEach
  void tearDown() throws Exception {
    try (Admin admin = KafkaTestBroker.admin(bootstrap)) {
      admin.deleteTopics(List.of(topic)); // may not exist: nothing to wait for
    }
  }

  private Path archive(String secondPayload) throws Exception {
    Path file = dir.resolve("archive.jsonl");
    Files.writeString(file, String.join("\n",
        record(ID_2, "2026-09-29T08:00:02Z", "{\"n\":2}"),
        record(ID_1, "2026-09-29T08:00:01Z", "{\"n\":1}"),
        record(ID_3, "2026-09-29T08:00:03Z", secondPayload),
        ""));
    return file;
  }

  private String record(String id, String createdAt, String payload) {
    return "{\"id\":\"" + id + "\",\"topic\":\"" + topic + "\",\"aggregate_type\":\"order\",\"aggregate_id\":\"42\","
        + "\"created_at\":\"" + createdAt + "\",\"payload\":" + payload + ",\"headers\":{\"tenant\":\"acme\"}}";
  }

  private int replay(Path archive, String... extra) {
    List<String> args = new java.util.ArrayList<>(List.of("--from-json", archive.toString(), "--topic", topic,
        "--from", "2026-09-29T08:00:00Z", "--to", "2026-09-29T09:00:00Z", "--batch-id", "rebuild-1",
        "--progress-interval", "0"));
    args.addAll(List.of(extra));
    return ReplayCommand.execute(args.toArray(String[]::new), new PrintStream(out, true, UTF_8),
        new PrintStream(err, true, UTF_8));
  }

  @Test
  void replaysInOrderWithTheReplayHeadersKeyedByAggregate() throws Exception {
    KafkaTestBroker.createTopic(bootstrap, topic, 4);
    int exit = replay(archive("{\"n\":3}"), "--to-kafka", bootstrap);

    assertThat(exit).as(err.toString(UTF_8)).isEqualTo(ReplayCommand.OK);
    assertThat(err.toString(UTF_8)).contains("published 3 events to Kafka at " + bootstrap);
    List<ConsumerRecord<byte[], byte[]>> records = TopicReader.readAtLeast(bootstrap, topic, 3);
    assertThat(records).hasSize(3);
    assertThat(records).extracting(r -> new String(r.value(), UTF_8))
        .containsExactly("{\"n\":1}", "{\"n\":2}", "{\"n\":3}");
    assertThat(records).extracting(r -> new String(r.key(), UTF_8)).containsOnly("42");
    assertThat(KafkaHeaders.toMap(records.get(0).headers())).isEqualTo(Map.of(
        "tenant", "acme", "x-replay", "true", "x-replay-batch-id", "rebuild-1", "x-original-event-id", ID_1,
        "x-aggregate-type", "order", "x-aggregate-id", "42"));
  }

  @Test
  void aRecordOverTheTopicsLimitStopsTheReplayBeforeAnythingIsPublished() throws Exception {
    try (Admin admin = KafkaTestBroker.admin(bootstrap)) {
      admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("max.message.bytes", "1024"))))
          .all().get(30, TimeUnit.SECONDS);
    }
    int exit = replay(archive("{\"blob\":\"" + "x".repeat(3_000) + "\"}"), "--to-kafka", bootstrap);

    String stderr = err.toString(UTF_8);
    assertThat(exit).as(stderr).isEqualTo(ReplayCommand.BAD_INPUT);
    assertThat(stderr).contains("nothing was published", "event " + ID_3 + " cannot go to Kafka: the record would"
        + " be up to ", " bytes (value 3011, key 2, headers ", "over the 1024 bytes of topic " + topic
        + "'s max.message.bytes: raise the topic's limit")
        .doesNotContain("xxxx");
    try (Admin admin = KafkaTestBroker.admin(bootstrap)) {
      assertThat(admin.listOffsets(Map.of(new org.apache.kafka.common.TopicPartition(topic, 0),
          org.apache.kafka.clients.admin.OffsetSpec.latest())).all().get(30, TimeUnit.SECONDS).values())
          .allSatisfy(o -> assertThat(o.offset()).as("records on the topic").isZero());
    }

    // the size is Kafka's own: a value smaller by the excess makes a record of exactly the limit, which Kafka takes
    java.util.regex.Matcher size = java.util.regex.Pattern.compile("would be up to (\\d+) bytes").matcher(stderr);
    assertThat(size.find()).isTrue();
    int fitting = 3_011 - (Integer.parseInt(size.group(1)) - 1024) - "{\"blob\":\"\"}".length();
    err.reset();
    exit = replay(archive("{\"blob\":\"" + "x".repeat(fitting) + "\"}"), "--to-kafka", bootstrap);
    assertThat(exit).as(err.toString(UTF_8)).isEqualTo(ReplayCommand.OK);
    assertThat(TopicReader.readAtLeast(bootstrap, topic, 3)).hasSize(3);
  }

  @Test
  void aProducerSettingOfThePublisherIsWhatTheReplayChecksAgainst() throws Exception {
    KafkaTestBroker.createTopic(bootstrap, topic, 1);
    try (KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(bootstrap)
        .property("max.request.size", "2000").build()) {
      EventReplay replay = replayTo(PublisherSink.of(kafka), archive("{\"blob\":\"" + "x".repeat(3_000) + "\"}"));

      assertThatThrownBy(replay::run).isInstanceOf(UnpublishableEventException.class)
          .hasMessageContaining("event " + ID_3 + " cannot go to Kafka: the record would be up to ")
          .hasMessageEndingWith("over the 2000 bytes of the producer's max.request.size: raise max.request.size");
    }
  }

  /** Replay reaches a Kafka that takes only SASL clients through the publisher's security settings. */
  @Test
  void aReplayReachesASaslKafkaWithThePublishersSecuritySettings() throws Exception {
    KafkaTestBroker.ChildBroker broker = KafkaTestBroker.child();
    KafkaTestBroker.createTopic(broker.bootstrap(), topic, 1);
    String user = "replayer-" + UUID.randomUUID().toString().substring(0, 8);
    String password = UUID.randomUUID().toString();
    try (Admin admin = KafkaTestBroker.admin(broker.bootstrap())) {
      admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
          new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), password))).all().get(30, TimeUnit.SECONDS);
    }
    try (KafkaPublisher kafka = KafkaPublisher.builder().bootstrapServers(broker.scramBootstrap())
        .property("security.protocol", "SASL_PLAINTEXT")
        .property("sasl.mechanism", KafkaTestBroker.ChildBroker.SCRAM_MECHANISM)
        .property("sasl.jaas.config", "org.apache.kafka.common.security.scram.ScramLoginModule required"
            + " username=\"" + user + "\" password=\"" + password + "\";").build()) {
      ReplayResult result = replayTo(PublisherSink.of(kafka), archive("{\"n\":3}")).run();

      assertThat(result.published()).isEqualTo(3);
    }
    assertThat(TopicReader.readAtLeast(broker.bootstrap(), topic, 3)).extracting(r -> new String(r.value(), UTF_8))
        .containsExactly("{\"n\":1}", "{\"n\":2}", "{\"n\":3}");
    KafkaTestBroker.deleteTopic(broker.bootstrap(), topic);
  }

  private EventReplay replayTo(ReplaySink sink, Path archive) {
    return EventReplay.builder().source(JsonArchiveSource.of(archive)).topic(topic)
        .from(Instant.parse("2026-09-29T08:00:00Z")).to(Instant.parse("2026-09-29T09:00:00Z")).sink(sink)
        .batchId("rebuild-1").build();
  }

  @Test
  void aMissingTopicIsABadArgument() throws Exception {
    int exit = replay(archive("{\"n\":3}"), "--to-kafka", bootstrap);

    assertThat(exit).isEqualTo(ReplayCommand.BAD_INPUT);
    assertThat(err.toString(UTF_8)).contains("--to-kafka: Kafka topic '" + topic + "' does not exist at " + bootstrap);
  }

  @Test
  void natsAndKafkaTogetherAreRefused() throws Exception {
    int exit = replay(archive("{\"n\":3}"), "--to-kafka", bootstrap, "--to-nats", "nats://127.0.0.1:4222",
        "--nats-stream", "S");

    assertThat(exit).isEqualTo(ReplayCommand.BAD_INPUT);
    assertThat(err.toString(UTF_8)).contains("--to-nats, --to-kafka and --to-rabbitmq exclude each other");
  }
}
