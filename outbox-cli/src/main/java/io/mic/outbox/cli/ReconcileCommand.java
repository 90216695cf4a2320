package io.mic.outbox.cli;

import io.mic.outbox.BrokerScan;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.cli.reconcile.ReconcileReport;
import io.mic.outbox.cli.reconcile.Reconciliation;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.OutboxStoreException;
import io.mic.outbox.kafka.KafkaTopicScan;
import io.mic.outbox.nats.JetStreamScan;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "reconcile", sortOptions = false,
    description = {"Compares, for one topic and an inclusive range of creation times, the outbox with the broker",
        "(NATS JetStream or Kafka), a consumer's inbox and the domain, and reports each difference with a count and",
        "sample ids. Exit 1 when a difference is over --tolerance. RabbitMQ keeps no log, so it cannot be scanned."})
final class ReconcileCommand extends OutboxCommand {
  @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "the topic to reconcile")
  private String topic;

  @Option(names = "--from", required = true, paramLabel = "INSTANT", converter = Instants.class,
      description = "start of the range of created_at, included, e.g. 2026-09-29T08:00:00Z")
  private Instant from;

  @Option(names = "--to", required = true, paramLabel = "INSTANT", converter = Instants.class,
      description = "end of the range, included")
  private Instant to;

  @Option(names = "--live-threshold", paramLabel = "DURATION", converter = Durations.class, defaultValue = "5m",
      description = "an event PENDING or PROCESSING for longer is a difference (default: ${DEFAULT-VALUE})")
  private Duration liveThreshold;

  @Option(names = "--nats-url", paramLabel = "URL", description = "scan this NATS server's JetStream")
  private String natsUrl;

  @Option(names = "--nats-stream", paramLabel = "NAME", description = "the stream holding the topic's subject")
  private String natsStream;

  @Option(names = "--nats-subject-prefix", paramLabel = "PREFIX", description = "the publisher's subject prefix")
  private String natsPrefix;

  @Option(names = "--kafka-bootstrap", paramLabel = "HOST:PORT", description = "scan this Kafka cluster: every"
      + " partition of the topic from --from (by timestamp) to its end offsets when the scan starts")
  private String kafkaBootstrap;

  @Option(names = "--kafka-topic", paramLabel = "NAME", description = "the Kafka topic, when the publisher maps"
      + " event topics to other names (default: the event topic)")
  private String kafkaTopic;

  @Option(names = "--kafka-property", paramLabel = "KEY=VALUE", description = "a Kafka consumer setting"
      + " (security.protocol, sasl.*, ssl.* …); repeatable")
  private Map<String, String> kafkaProperties = new LinkedHashMap<>();

  @Option(names = "--rabbitmq", description = "the topic goes to RabbitMQ: say in the report that the broker"
      + " cannot be scanned")
  private boolean rabbitMq;

  @Option(names = "--consumer", paramLabel = "NAME", description = "compare with this consumer's inbox rows")
  private String consumer;

  @Option(names = "--inbox-table", paramLabel = "NAME", defaultValue = JdbcInbox.DEFAULT_TABLE,
      description = "the inbox table (default: ${DEFAULT-VALUE})")
  private String inboxTable;

  @Option(names = "--domain-sql", paramLabel = "SQL", description = "a query whose first column is the id of each"
      + " aggregate that should have an event of the topic in the range")
  private String domainSql;

  @Option(names = "--tolerance", paramLabel = "N", defaultValue = "0",
      description = "differences up to N are not a failure (default: ${DEFAULT-VALUE})")
  private long tolerance;

  @Override
  public Integer call() throws Exception {
    if (from.isAfter(to)) {
      throw new UsageException("--from " + from + " is after --to " + to + ": give the earlier time first");
    }
    if ((natsUrl == null) != (natsStream == null)) {
      throw new UsageException("--nats-url and --nats-stream go together: the server and the stream to scan");
    }
    if ((natsUrl != null ? 1 : 0) + (kafkaBootstrap != null ? 1 : 0) + (rabbitMq ? 1 : 0) > 1) {
      throw new UsageException("--nats-url, --kafka-bootstrap and --rabbitmq exclude each other: one broker per"
          + " topic");
    }
    if (kafkaBootstrap == null && (kafkaTopic != null || !kafkaProperties.isEmpty())) {
      throw new UsageException("--kafka-topic and --kafka-property need --kafka-bootstrap: the cluster to scan");
    }
    if (tolerance < 0) {
      throw new UsageException("--tolerance must be >= 0, was " + tolerance);
    }
    Database db = database();
    Reconciliation.Builder b = Reconciliation.builder().dataSource(db.dataSource()).store(db.store()).topic(topic)
        .range(from, to).liveThreshold(liveThreshold);
    if (consumer != null) {
      b.inbox(inboxTable, consumer);
    }
    if (domainSql != null) {
      b.domainSql(domainSql);
    }
    if (rabbitMq) {
      b.brokerUnavailable("RabbitMQ keeps no log of published messages, so the broker was not compared: check"
          + " the consumer's inbox (--consumer) instead");
    }
    ReconcileReport report;
    JetStreamScan nats = natsUrl == null ? null : connectNats();
    try (nats) {
      if (nats != null) {
        b.broker(nats);
      }
      if (kafkaBootstrap != null) {
        b.broker(kafkaScan());
      }
      Reconciliation reconciliation = build(b);
      err().println("reconciling topic " + topic + " from " + from + " to " + to + " …");
      report = reconciliation.run();
    } catch (SQLException | OutboxStoreException e) {
      throw db.failed("reconcile", e);
    } catch (Reconciliation.DomainQueryFailedException e) {
      throw new UsageException("--domain-sql failed: " + e.getMessage() + " (it runs in a read-only transaction,"
          + " rolled back at the end)");
    } catch (InvalidConfigurationException e) { // the stream does not exist, or bootstrap holds credentials
      throw new UsageException(e.getMessage() + (nats != null ? "; check --nats-stream and --nats-subject-prefix"
          + " (nats stream ls lists the streams and their subjects)" : ""));
    } catch (BrokerScan.ScanFailedException e) {
      throw new CheckFailedException(e.getMessage()); // exit 1: the broker could not be compared
    }
    if (json()) {
      json(report);
    } else {
      text(report);
    }
    return report.over(tolerance).isEmpty() && report.comparable() ? MicOutbox.OK : MicOutbox.CHECK_FAILED;
  }

  private static Reconciliation build(Reconciliation.Builder b) {
    try {
      return b.build();
    } catch (IllegalArgumentException e) { // the other options were checked before
      throw new UsageException("--domain-sql " + e.getMessage());
    }
  }

  /** Exit 1 when the server cannot be reached: the broker could not be compared, as a failed check. */
  private JetStreamScan connectNats() throws InterruptedException {
    try {
      return JetStreamScan.connect(natsUrl, natsStream, natsPrefix);
    } catch (BrokerScan.ScanFailedException e) {
      throw new CheckFailedException(e.getMessage() + "; check --nats-url");
    }
  }

  /** The Kafka scan, its failures naming the options to check. */
  private BrokerScan kafkaScan() {
    KafkaTopicScan scan = new KafkaTopicScan(kafkaBootstrap, kafkaTopic != null ? kafkaTopic : topic,
        kafkaProperties);
    return new BrokerScan() {
      @Override
      public Set<String> eventIds(String eventTopic, Instant since) {
        try {
          return scan.eventIds(eventTopic, since);
        } catch (InvalidConfigurationException e) { // the topic does not exist
          throw new DatabaseException(e.getMessage() + ": check --kafka-topic (the topic the publisher writes to)",
              e);
        } catch (ScanFailedException e) {
          throw new CheckFailedException(e.getMessage() + "; check --kafka-bootstrap, and --kafka-property for a"
              + " secured cluster");
        }
      }

      @Override
      public String toString() {
        return scan.toString();
      }
    };
  }

  private void text(ReconcileReport r) {
    var out = out();
    out.println("topic " + r.topic() + ", created " + r.from() + " .. " + r.to());
    out.println("outbox: " + r.dispatched() + " dispatched, " + r.live() + " live, " + r.deadLetters() + " in the DLQ");
    if (r.onBroker() >= 0) {
      out.println("broker: " + r.onBroker() + " message(s) of these events");
    }
    for (ReconcileReport.Difference d : r.differences()) {
      String flag = d.count() > tolerance ? "DIFF" : "ok  ";
      out.println(flag + " " + d.name() + ": " + d.count() + " (" + d.description() + ")"
          + (d.sample().isEmpty() ? "" : " e.g. " + String.join(", ", d.sample())));
    }
    r.notes().forEach(n -> out.println("note: " + n));
  }

  private void json(ReconcileReport r) {
    try (Json j = new Json(out())) {
      j.begin().field("topic", r.topic()).field("from", r.from()).field("to", r.to())
          .field("dispatched", r.dispatched()).field("live", r.live()).field("deadLetters", r.deadLetters());
      if (r.onBroker() >= 0) {
        j.field("onBroker", r.onBroker());
      } else {
        j.nullField("onBroker");
      }
      j.field("tolerance", tolerance).beginObject("differences");
      for (ReconcileReport.Difference d : r.differences()) {
        j.beginObject(d.name()).field("count", d.count()).field("overTolerance", d.count() > tolerance)
            .field("description", d.description()).beginArray("sample");
        d.sample().forEach(j::value);
        j.endArray().end();
      }
      j.end().field("comparable", r.comparable()).beginArray("notes");
      r.notes().forEach(j::value);
      j.endArray().end();
    }
  }
}
