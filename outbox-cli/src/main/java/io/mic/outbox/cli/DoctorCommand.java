package io.mic.outbox.cli;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.MessagePublisher;
import io.mic.outbox.jdbc.OutboxDoctor;
import io.mic.outbox.jdbc.OutboxDoctor.Check;
import io.mic.outbox.jdbc.OutboxDoctor.Verdict;
import io.mic.outbox.jdbc.OutboxStoreException;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "doctor", sortOptions = false,
    description = {"Checks the outbox first: the schema version against this mic-outbox's, the indexes, autovacuum",
        "and dead tuples (PostgreSQL), the oldest open transaction, the lag, dead letters, held aggregates, pauses,",
        "and with --nats, --rabbitmq or --kafka that the broker takes every topic with live events. One line per",
        "check: PASS, WARN, FAIL or N/A (the database has no such thing), the figure and the remedy. Exit 0 when",
        "nothing warns or fails, 1 otherwise."})
final class DoctorCommand extends OutboxCommand {
  @Option(names = "--nats", paramLabel = "URL", description = "check that a JetStream stream captures the subject"
      + " of every topic with live events")
  private String natsUrl;

  @Option(names = "--nats-subject-prefix", paramLabel = "PREFIX", description = "the publisher's subject prefix")
  private String natsPrefix;

  @Option(names = "--rabbitmq", paramLabel = "URI", description = "check that the exchange of --rabbitmq-exchange"
      + " exists (it takes every routing key)")
  private String rabbitUri;

  @Option(names = "--rabbitmq-exchange", paramLabel = "NAME", description = "the exchange the publisher sends to")
  private String exchange;

  @Option(names = "--rabbitmq-addresses", paramLabel = "HOST:PORT,…", description = "the cluster's nodes, in place"
      + " of the host and port of --rabbitmq (which still gives credentials, virtual host and TLS)")
  private String rabbitAddresses;

  @Option(names = "--kafka", paramLabel = "BOOTSTRAP", description = "check that a Kafka topic named after every"
      + " topic with live events exists")
  private String kafkaBootstrap;

  @Option(names = "--kafka-property", paramLabel = "KEY=VALUE", description = "a Kafka client setting"
      + " (security.protocol, sasl.*, ssl.* …); repeatable")
  private Map<String, String> kafkaProperties = new LinkedHashMap<>();

  @Option(names = "--max-lag", paramLabel = "DURATION", converter = Durations.class, description = "warn when the"
      + " oldest live event is older (default: 1m)")
  private Duration maxLag = OutboxDoctor.DEFAULT_MAX_LAG;

  @Option(names = "--max-transaction-age", paramLabel = "DURATION", converter = Durations.class,
      description = "warn when a transaction has been open longer (default: 5m)")
  private Duration maxTransactionAge = OutboxDoctor.DEFAULT_MAX_TRANSACTION_AGE;

  @Override
  public Integer call() throws InterruptedException {
    if ((rabbitUri == null) != (exchange == null)) {
      throw new UsageException("--rabbitmq and --rabbitmq-exchange go together: the broker and the exchange the"
          + " publisher sends to");
    }
    if (rabbitUri == null && rabbitAddresses != null) {
      throw new UsageException("--rabbitmq-addresses needs --rabbitmq: the URI gives credentials and virtual host");
    }
    if (natsUrl == null && natsPrefix != null) {
      throw new UsageException("--nats-subject-prefix needs --nats: the server to ask");
    }
    if (kafkaBootstrap == null && !kafkaProperties.isEmpty()) {
      throw new UsageException("--kafka-property needs --kafka: the cluster to ask");
    }
    OutboxDoctor doctor;
    try {
      doctor = OutboxDoctor.builder().maxLag(maxLag).maxTransactionAge(maxTransactionAge).store(database().store())
          .build();
    } catch (InvalidConfigurationException e) {
      throw new UsageException("--" + e.getMessage().replace("maxLag", "max-lag")
          .replace("maxTransactionAge", "max-transaction-age"));
    }
    List<Check> checks;
    try {
      checks = new ArrayList<>(doctor.checks());
      if (natsUrl != null) {
        checks.addAll(broker(doctor, "nats", () -> NatsJetStreamPublisher.builder().url(natsUrl)
            .subjectPrefix(natsPrefix).build()));
      }
      if (rabbitUri != null) {
        checks.addAll(broker(doctor, "rabbitmq", () -> RabbitMqPublisher.builder().uri(rabbitUri).exchange(exchange)
            .addresses(rabbitAddresses).build()));
      }
      if (kafkaBootstrap != null) {
        checks.addAll(broker(doctor, "kafka", this::kafka));
      }
    } catch (OutboxStoreException e) {
      throw database().failed("run the checks", e);
    }
    if (json()) {
      json(checks);
    } else {
      text(checks);
    }
    return checks.stream().allMatch(c -> c.verdict() == Verdict.PASS || c.verdict() == Verdict.NOT_APPLICABLE)
        ? MicOutbox.OK : MicOutbox.CHECK_FAILED;
  }

  private KafkaPublisher kafka() {
    KafkaPublisher.Builder b = KafkaPublisher.builder().bootstrapServers(kafkaBootstrap);
    kafkaProperties.forEach(b::property);
    return b.build();
  }

  /** The broker's checks; a publisher that cannot be built (a bad URI) is one {@code FAIL}. */
  private static List<Check> broker(OutboxDoctor doctor, String name, Supplier<MessagePublisher> publisher)
      throws InterruptedException {
    MessagePublisher p;
    try {
      p = publisher.get();
    } catch (RuntimeException e) {
      return List.of(new Check(name, Verdict.FAIL, "cannot connect: " + MicOutbox.message(e),
          "check the broker's address and credentials"));
    }
    try {
      return doctor.destinations(name, p);
    } finally {
      try {
        p.close();
      } catch (Exception e) {
        // the checks are done; a publisher that cannot close its connection changes none of them
      }
    }
  }

  private void text(List<Check> checks) {
    PrintWriter out = out();
    int width = checks.stream().mapToInt(c -> c.name().length()).max().orElse(0);
    for (Check c : checks) {
      out.println(String.format("%-4s %-" + width + "s  ", label(c.verdict()), c.name()) + printable(c.figure())
          + (c.remedy() == null ? "" : " -> " + printable(c.remedy())));
    }
    Map<Verdict, Integer> counts = counts(checks);
    out.println(counts.get(Verdict.PASS) + " pass, " + counts.get(Verdict.WARN) + " warn, " + counts.get(Verdict.FAIL)
        + " fail, " + counts.get(Verdict.NOT_APPLICABLE) + " not applicable");
  }

  private void json(List<Check> checks) {
    Map<Verdict, Integer> counts = counts(checks);
    try (Json j = new Json(out())) {
      j.begin().field("table", database().store().table()).field("database", database().dialect().name())
          .beginArray("checks");
      for (Check c : checks) {
        j.begin().field("name", c.name()).field("verdict", c.verdict().name()).field("figure", c.figure())
            .field("remedy", c.remedy()).end();
      }
      j.endArray().beginObject("summary").field("pass", counts.get(Verdict.PASS)).field("warn", counts.get(Verdict.WARN))
          .field("fail", counts.get(Verdict.FAIL)).field("notApplicable", counts.get(Verdict.NOT_APPLICABLE)).end().end();
    }
  }

  private static Map<Verdict, Integer> counts(List<Check> checks) {
    Map<Verdict, Integer> counts = new EnumMap<>(Verdict.class);
    for (Verdict v : Verdict.values()) {
      counts.put(v, 0);
    }
    checks.forEach(c -> counts.merge(c.verdict(), 1, Integer::sum));
    return counts;
  }

  private static String label(Verdict v) {
    return v == Verdict.NOT_APPLICABLE ? "N/A" : v.name();
  }

  /** Line breaks and terminal escape codes (a pause reason holds what an operator typed) as {@code \\uXXXX}. */
  static String printable(String text) {
    StringBuilder b = new StringBuilder(text.length());
    text.codePoints().forEach(cp -> {
      if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
        b.append(String.format("\\u%04x", cp));
      } else {
        b.appendCodePoint(cp);
      }
    });
    return b.toString();
  }
}
