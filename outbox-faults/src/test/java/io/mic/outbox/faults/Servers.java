package io.mic.outbox.faults;

import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.kafka.KafkaTestBroker;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Assumptions;

/**
 * The suite's private PostgreSQL, NATS, RabbitMQ and Kafka servers, started once per test JVM on first use and stopped
 * (directories deleted) when the JVM exits, whether the tests passed or not. The shared servers of the
 * machine are never touched: faults that stop or crash a server hit these.
 */
final class Servers {
  /** Test secrets: they must never appear in a log line or an exception message. */
  static final String PG_ADMIN_PASSWORD = secret("pgadmin");
  static final String PG_APP_PASSWORD = secret("pgapp");
  static final String NATS_PASSWORD = secret("nats");
  static final String RABBIT_PASSWORD = secret("rabbit");

  private static PrivatePostgres postgres;
  private static PrivateNats nats;
  private static PrivateRabbit rabbit;
  private static KafkaTestBroker.ChildBroker kafka;
  private static NatsCluster natsCluster;
  private static KafkaCluster kafkaCluster;
  private static RabbitCluster rabbitCluster;

  private Servers() {}

  private static String secret(String what) {
    byte[] b = new byte[9];
    new SecureRandom().nextBytes(b);
    return "S3cr3t" + what + HexFormat.of().formatHex(b);
  }

  static synchronized PrivatePostgres postgres() throws Exception {
    requireBinary(PrivatePostgres.BIN + "/initdb");
    if (postgres == null) {
      postgres = PrivatePostgres.start(PG_ADMIN_PASSWORD, PG_APP_PASSWORD);
      Runtime.getRuntime().addShutdownHook(new Thread(postgres::close, "stop-private-postgres"));
    }
    return postgres;
  }

  static synchronized PrivateNats nats() throws Exception {
    requireBinary(PrivateNats.BINARY);
    if (nats == null) {
      nats = PrivateNats.start(NATS_PASSWORD);
      Runtime.getRuntime().addShutdownHook(new Thread(nats::close, "stop-private-nats"));
    }
    return nats;
  }

  /** Three clustered nats-server processes, started on first use, killed and deleted when the JVM exits. */
  static synchronized NatsCluster natsCluster() throws Exception {
    requireBinary(PrivateNats.BINARY);
    if (natsCluster == null) {
      natsCluster = NatsCluster.start(NATS_PASSWORD);
      Runtime.getRuntime().addShutdownHook(new Thread(natsCluster::close, "stop-private-nats-cluster"));
    }
    return natsCluster;
  }

  static synchronized PrivateRabbit rabbit() throws Exception {
    requireBinary(PrivateRabbit.BIN + "/rabbitmq-server");
    if (rabbit == null) {
      rabbit = PrivateRabbit.start(RABBIT_PASSWORD);
      Runtime.getRuntime().addShutdownHook(new Thread(rabbit::close, "stop-private-rabbitmq"));
    }
    return rabbit;
  }

  /** A single-node KRaft broker in a child JVM of the suite's own (it stops when this JVM ends). */
  static synchronized KafkaTestBroker.ChildBroker kafka() {
    if (kafka == null) {
      kafka = KafkaTestBroker.ChildBroker.start();
    }
    return kafka;
  }

  /** Three clustered RabbitMQ nodes, started on first use, stopped and deleted when the JVM exits. */
  static synchronized RabbitCluster rabbitCluster() throws Exception {
    requireBinary(PrivateRabbit.BIN + "/rabbitmq-server");
    if (rabbitCluster == null) {
      rabbitCluster = RabbitCluster.start(RABBIT_PASSWORD);
      Runtime.getRuntime().addShutdownHook(new Thread(rabbitCluster::close, "stop-private-rabbitmq-cluster"));
    }
    return rabbitCluster;
  }

  /** Three clustered KRaft nodes in child JVMs, started on first use, killed and deleted when the JVM exits. */
  static synchronized KafkaCluster kafkaCluster() throws Exception {
    if (kafkaCluster == null) {
      kafkaCluster = KafkaCluster.start();
      Runtime.getRuntime().addShutdownHook(new Thread(kafkaCluster::close, "stop-private-kafka-cluster"));
    }
    return kafkaCluster;
  }

  static void createKafkaTopic(String topic, int partitions) throws Exception {
    try (Admin admin = kafkaAdmin()) {
      admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(60, TimeUnit.SECONDS);
    }
  }

  static void deleteKafkaTopic(String topic) throws Exception {
    try (Admin admin = kafkaAdmin()) {
      admin.deleteTopics(Set.of(topic)).all().get(60, TimeUnit.SECONDS);
    }
  }

  private static Admin kafkaAdmin() {
    return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka().bootstrap(),
        AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000", AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000"));
  }

  /**
   * Every record of {@code topic} from the beginning up to the end offsets of now, partition by partition in
   * offset order: an aggregate's events all go to the partition of its key, so its order is kept here.
   */
  static List<Delivery> readKafkaTopic(String topic) {
    return readKafkaTopic(kafka().bootstrap(), topic);
  }

  static List<Delivery> readKafkaTopic(String bootstrap, String topic) {
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
        ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName(),
        ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName()))) {
      List<TopicPartition> partitions = consumer.partitionsFor(topic, Duration.ofSeconds(30)).stream()
          .map(p -> new TopicPartition(topic, p.partition())).toList();
      consumer.assign(partitions);
      consumer.seekToBeginning(partitions);
      Map<TopicPartition, Long> end = consumer.endOffsets(partitions, Duration.ofSeconds(30));
      List<ConsumerRecord<byte[], byte[]>> records = new ArrayList<>();
      Awaitility.await().atMost(Duration.ofSeconds(60)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(10))
          .until(() -> {
            consumer.poll(Duration.ofMillis(200)).forEach(records::add);
            return partitions.stream().allMatch(p -> consumer.position(p) >= end.get(p));
          });
      records.sort(Comparator.<ConsumerRecord<byte[], byte[]>>comparingInt(ConsumerRecord::partition)
          .thenComparingLong(ConsumerRecord::offset));
      List<Delivery> all = new ArrayList<>();
      for (ConsumerRecord<byte[], byte[]> r : records) {
        all.add(new Delivery(UUID.fromString(header(r, OutboxHeaders.EVENT_ID)), header(r, OutboxHeaders.AGGREGATE_ID),
            Workload.sequenceOf(new String(r.value(), StandardCharsets.UTF_8)), 0));
      }
      return all;
    }
  }

  private static String header(ConsumerRecord<byte[], byte[]> r, String name) {
    return new String(r.headers().lastHeader(name).value(), StandardCharsets.UTF_8);
  }

  /** The suite starts its own servers: without the binaries it fails under CI=true and is skipped elsewhere. */
  private static void requireBinary(String path) {
    if (!Files.isExecutable(Path.of(path))) {
      String message = path + " is missing: install postgresql-15, nats-server and rabbitmq-server (Debian"
          + " packages) to run the fault suite";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(message);
      }
      Assumptions.abort(message);
    }
  }

  static boolean full() {
    return Boolean.getBoolean("faults.full");
  }
}
