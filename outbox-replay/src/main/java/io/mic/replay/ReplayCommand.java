package io.mic.replay;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.MessagePublisher;
import io.mic.outbox.archive.Timestamps;
import io.mic.outbox.kafka.KafkaPublisher;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import io.mic.replay.internal.CliProgress;
import java.io.BufferedWriter;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.function.Supplier;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine;

/**
 * The {@code mic-events-replay} command: {@link EventReplay} from the command line.
 *
 * <pre>{@code
 * java -jar outbox-replay/target/mic-events-replay.jar --from-json archive.jsonl.gz \
 *     --topic order.created --from 2026-09-29T08:00:00Z --to 2026-09-29T10:00:00Z \
 *     --to-nats nats://127.0.0.1:4222 --nats-stream ORDERS
 * }</pre>
 */
@Command(name = "mic-events-replay", mixinStandardHelpOptions = true, sortOptions = false,
    version = "mic-events-replay 0.1.0",
    description = {
        "Republishes the archived events of one topic and an inclusive time range, in (created_at, id) order.",
        "Without --to-nats, --to-kafka or --to-rabbitmq it is a dry run: one JSON line per selected event on stdout, a summary on stderr."},
    exitCodeListHeading = "%nExit codes:%n",
    exitCodeList = {
        "0:all selected events published (or dry run done)",
        "1:a publication failed, or the broker cannot be reached: the batch stopped; stderr says how many were"
            + " published and the id of the first event not published",
        "2:bad arguments, unreadable input, or an event the destination cannot take (nothing published)"},
    footerHeading = "%nEnvironment:%n",
    footer = "CLICKHOUSE_USER, CLICKHOUSE_PASSWORD   ClickHouse credentials when the options are not given")
public final class ReplayCommand implements Callable<Integer> {
  public static final int OK = 0;
  public static final int PUBLICATION_FAILED = 1;
  public static final int BAD_INPUT = 2;

  @Spec
  private CommandSpec spec;

  @ArgGroup(exclusive = true, multiplicity = "1")
  private SourceOptions source;

  static final class SourceOptions {
    @Option(names = "--from-json", paramLabel = "PATH",
        description = "JSON archive: JSON Lines (.gz accepted) or one JSON array of records; or a directory of such files (the archiver's), merged in replay order")
    Path json;

    @Option(names = "--from-clickhouse", paramLabel = "URL",
        description = "ClickHouse HTTP interface, e.g. http://clickhouse.svc:8123")
    String clickHouse;
  }

  @Option(names = "--clickhouse-table", paramLabel = "TABLE", defaultValue = ClickHouseArchiveSource.DEFAULT_TABLE,
      description = "archive table, name or database.name (default: ${DEFAULT-VALUE})")
  private String table;

  @Option(names = "--clickhouse-user", paramLabel = "USER", defaultValue = "${env:CLICKHOUSE_USER}",
      description = "ClickHouse user (default: $CLICKHOUSE_USER, else the server's default user)")
  private String clickHouseUser;

  @Option(names = "--clickhouse-password", paramLabel = "PASSWORD", defaultValue = "${env:CLICKHOUSE_PASSWORD}",
      description = "ClickHouse password (default: $CLICKHOUSE_PASSWORD; prefer the variable: options show in ps)")
  private String clickHousePassword;

  @Option(names = "--topic", required = true, paramLabel = "TOPIC", description = "the topic to replay")
  private String topic;

  @Option(names = "--from", required = true, paramLabel = "ISO-8601", converter = InstantConverter.class,
      description = "first instant, inclusive, e.g. 2026-09-29T08:00:00Z (any offset)")
  private Instant from;

  @Option(names = "--to", required = true, paramLabel = "ISO-8601", converter = InstantConverter.class,
      description = "last instant, inclusive")
  private Instant to;

  @Option(names = "--to-nats", paramLabel = "URL", description = "publish to this NATS server, e.g. nats://127.0.0.1:4222")
  private String natsUrl;

  @Option(names = "--nats-stream", paramLabel = "STREAM", description = "the JetStream stream (must exist and capture the topic)")
  private String natsStream;

  @Option(names = "--to-kafka", paramLabel = "BOOTSTRAP",
      description = "publish to this Kafka cluster, e.g. 127.0.0.1:9092 (the topic must exist)")
  private String kafkaBootstrap;

  @Option(names = "--to-rabbitmq", paramLabel = "URI",
      description = "publish to this RabbitMQ broker, e.g. amqp://user:password@127.0.0.1:5672 (never printed with its password)")
  private String rabbitUri;

  @Option(names = "--rabbitmq-exchange", paramLabel = "EXCHANGE",
      description = "the exchange (must exist); routing key = the topic, and a queue must be bound for it")
  private String rabbitExchange;

  @Option(names = "--rabbitmq-addresses", paramLabel = "HOST:PORT,…", description = "the cluster's nodes, in place"
      + " of the host and port of --to-rabbitmq (which still gives credentials, virtual host and TLS)")
  private String rabbitAddresses;

  @Option(names = "--batch-id", paramLabel = "ID", description = "batch id; reuse it to resume a failed batch (default: random)")
  private String batchId;

  @Option(names = "--max-pending-acks", paramLabel = "N", defaultValue = "256",
      description = "publications waiting for their PubAck at once (default: ${DEFAULT-VALUE})")
  private int maxPendingAcks;

  @Option(names = "--temp-dir", paramLabel = "DIR", description = "where a JSON archive too big for memory is sorted (default: java.io.tmpdir)")
  private Path tempDir;

  @Option(names = "--sort-memory-mb", paramLabel = "MB", description = "memory for sorting a JSON archive (default: heap/6, 4 to 256)")
  private Integer sortMemoryMb;

  @Option(names = "--max-record-mb", paramLabel = "MB",
      description = "longest record of a JSON archive, uncompressed (default: 16); a longer one is refused with its line")
  private Integer maxRecordMb;

  @Option(names = "--progress-interval", paramLabel = "SECONDS", defaultValue = "10",
      description = "seconds between progress lines on stderr, 0 for none (default: ${DEFAULT-VALUE})")
  private int progressSeconds;

  private PrintStream stdout;
  private PrintStream stderr;

  /** Returns the exit code; {@link #main} exits with it. */
  public static int execute(String[] args, PrintStream out, PrintStream err) {
    ReplayCommand command = new ReplayCommand();
    command.stdout = out;
    command.stderr = err;
    CommandLine cli = new CommandLine(command);
    cli.setOut(new PrintWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8), true));
    cli.setErr(new PrintWriter(new OutputStreamWriter(err, StandardCharsets.UTF_8), true));
    cli.setParameterExceptionHandler((e, a) -> {
      err.println("mic-events-replay: " + e.getMessage());
      err.println("Try 'mic-events-replay --help' for the options.");
      return BAD_INPUT;
    });
    cli.setExecutionExceptionHandler((e, c, p) -> command.fail(e));
    return cli.execute(args);
  }

  public static void main(String[] args) {
    if (System.getProperty("slf4j.internal.verbosity") == null) {
      // the command's own lines are its output: the jar has no logging backend (the sinks' libraries log
      // through SLF4J), so SLF4J's notice about that must not precede them; -Dslf4j.internal.verbosity=WARN shows it
      System.setProperty("slf4j.internal.verbosity", "ERROR");
    }
    System.exit(execute(args, System.out, System.err));
  }

  @Override
  public Integer call() throws Exception {
    checkCombinations();
    ReplaySource replaySource = source();
    EventReplay.Builder replay = EventReplay.builder().source(replaySource).batchId(batchId).topic(topic)
        .from(from).to(to).progress(new CliProgress(stderr, Duration.ofSeconds(Math.max(0, progressSeconds))));
    Writer dryRunOut = new BufferedWriter(new OutputStreamWriter(failingOnError(stdout), StandardCharsets.UTF_8),
        1 << 16);
    ReplayResult result;
    MessagePublisher publisher = natsUrl != null ? natsPublisher() : kafkaBootstrap != null ? kafkaPublisher()
        : rabbitUri != null ? rabbitPublisher() : null;
    try (publisher; ReplaySink sink = publisher != null ? PublisherSink.of(publisher) : new DryRunSink(dryRunOut)) {
      EventReplay eventReplay = build(replay.sink(sink)::build, EVENT_REPLAY_OPTIONS);
      if (batchId == null && !sink.isDryRun()) {
        // before the first publication: a run stopped from outside (Ctrl-C, a stopped pod) prints no summary,
        // and only the same batch id lets the destination drop what the rerun sends again
        stderr.println("batch id " + eventReplay.batchId() + ": if this replay stops before its summary, run the"
            + " same command with --batch-id " + eventReplay.batchId() + " to resume it");
      }
      result = eventReplay.run();
    }
    summary(result, replaySource, publisher); // after close: stdout is complete before the summary reaches stderr
    return OK;
  }

  /**
   * {@code target} as a stream whose writes fail once {@code target} failed: a {@link PrintStream} keeps its
   * errors to itself, and a dry run written to a full disk or a closed pipe must not end as if its list were
   * complete.
   */
  private static OutputStream failingOnError(PrintStream target) {
    return new FilterOutputStream(target) {
      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        target.write(b, off, len);
        check();
      }

      @Override
      public void flush() throws IOException {
        check(); // checkError() flushes
      }

      private void check() throws IOException {
        if (target.checkError()) {
          throw new IOException("stdout refused the output (a full disk, or a reader that went away)");
        }
      }
    };
  }

  private void checkCombinations() {
    boolean clickHouse = source.clickHouse != null;
    CommandLine.ParseResult parsed = spec.commandLine().getParseResult();
    for (String option : new String[] {"--clickhouse-table", "--clickhouse-user", "--clickhouse-password"}) {
      if (!clickHouse && parsed.hasMatchedOption(option)) {
        throw usage(option + " needs --from-clickhouse");
      }
    }
    for (String option : new String[] {"--temp-dir", "--sort-memory-mb", "--max-record-mb"}) {
      if (clickHouse && parsed.hasMatchedOption(option)) {
        throw usage(option + " applies to --from-json only: ClickHouse sorts on the server");
      }
    }
    if ((natsUrl != null ? 1 : 0) + (kafkaBootstrap != null ? 1 : 0) + (rabbitUri != null ? 1 : 0) > 1) {
      throw usage("--to-nats, --to-kafka and --to-rabbitmq exclude each other: replay to one broker at a time");
    }
    if (rabbitUri == null && (rabbitExchange != null || rabbitAddresses != null)) {
      String option = rabbitExchange != null ? "--rabbitmq-exchange" : "--rabbitmq-addresses";
      throw usage(option + " needs --to-rabbitmq URI");
    } else if (rabbitUri != null && rabbitExchange == null) {
      throw usage("--rabbitmq-exchange is required with --to-rabbitmq: name the exchange (it must exist)");
    }
    if (natsUrl == null) {
      for (String option : new String[] {"--nats-stream", "--max-pending-acks"}) {
        if (parsed.hasMatchedOption(option)) {
          throw usage(option + " needs --to-nats URL");
        }
      }
    } else if (natsStream == null) {
      throw usage("--nats-stream is required with --to-nats: name the JetStream stream that captures the topic");
    }
    if (progressSeconds < 0) {
      throw usage("--progress-interval must be >= 0, was " + progressSeconds);
    }
  }

  private CommandLine.ParameterException usage(String message) {
    return new CommandLine.ParameterException(spec.commandLine(), message);
  }

  private ReplaySource source() {
    if (source.json != null) {
      JsonArchiveSource.Builder json = JsonArchiveSource.builder().path(source.json).tempDir(tempDir);
      if (sortMemoryMb != null) {
        json.sortMemoryBytes((long) sortMemoryMb << 20);
      }
      if (maxRecordMb != null) {
        json.maxRecordBytes((long) maxRecordMb << 20);
      }
      return build(json::build, JSON_OPTIONS);
    }
    return build(ClickHouseArchiveSource.builder().url(source.clickHouse).table(table)
        .credentials(blankToNull(clickHouseUser), blankToNull(clickHousePassword))::build, CLICKHOUSE_OPTIONS);
  }

  private MessagePublisher natsPublisher() {
    return build(NatsJetStreamPublisher.builder().url(natsUrl).expectedStream(natsStream).connections(1)
        .maxPendingAcks(maxPendingAcks).connectionName("mic-events-replay")::build, NATS_OPTIONS);
  }

  private MessagePublisher kafkaPublisher() {
    if (!kafkaBootstrap.matches("[A-Za-z0-9_.\\[\\]:-]+:\\d{1,5}(,[A-Za-z0-9_.\\[\\]:-]+:\\d{1,5})*")) {
      throw usage("--to-kafka: bootstrap servers must be host:port[,host:port…], e.g. 127.0.0.1:9092, was '"
          + kafkaBootstrap + "'");
    }
    return build(KafkaPublisher.builder().bootstrapServers(kafkaBootstrap).property("client.id", "mic-events-replay")
        .deliveryTimeout(Duration.ofSeconds(30))::build, KAFKA_OPTIONS);
  }

  private MessagePublisher rabbitPublisher() {
    return build(RabbitMqPublisher.builder().uri(rabbitUri).exchange(rabbitExchange)
        .addresses(rabbitAddresses).connectionName("mic-events-replay")::build, RABBITMQ_OPTIONS);
  }

  private static String blankToNull(String s) {
    return s == null || s.isEmpty() ? null : s;
  }

  private static final Map<String, String> JSON_OPTIONS =
      Map.of("path", "--from-json", "tempDir", "--temp-dir", "sortMemoryBytes", "--sort-memory-mb",
          "maxRecordBytes", "--max-record-mb");
  private static final Map<String, String> CLICKHOUSE_OPTIONS = Map.of("url", "--from-clickhouse",
      "table", "--clickhouse-table", "user", "--clickhouse-user", "password", "--clickhouse-password");
  private static final Map<String, String> NATS_OPTIONS =
      Map.of("url", "--to-nats", "expectedStream", "--nats-stream", PublisherSink.DESTINATION, "--nats-stream",
          "maxPendingAcks", "--max-pending-acks");
  private static final Map<String, String> KAFKA_OPTIONS = Map.of("bootstrapServers", "--to-kafka",
      PublisherSink.DESTINATION, "--to-kafka");
  private static final Map<String, String> RABBITMQ_OPTIONS = Map.of("uri", "--to-rabbitmq",
      "exchange", "--rabbitmq-exchange", "addresses", "--rabbitmq-addresses", PublisherSink.DESTINATION,
      "--rabbitmq-exchange");
  private static final Map<String, String> EVENT_REPLAY_OPTIONS =
      Map.of("topic", "--topic", "from", "--from", "to", "--to", "batchId", "--batch-id");

  /** Runs a builder's {@code build()}, turning a validation error into a message that names the flag. */
  private <T> T build(Supplier<T> build, Map<String, String> flags) {
    try {
      return build.get();
    } catch (ReplayConfigurationException e) {
      throw usage(flags.getOrDefault(e.option(), e.option()) + ": " + e.getMessage());
    } catch (InvalidConfigurationException e) {
      // a publisher's builder names the option at fault first: "maxPendingAcks must be ..."
      String flag = flags.get(e.getMessage().split(" ", 2)[0]);
      throw usage(flag == null ? e.getMessage() : flag + ": " + e.getMessage());
    }
  }

  private void summary(ReplayResult r, ReplaySource replaySource, MessagePublisher publisher) {
    String range = "topic " + topic + ", " + Timestamps.format(from) + " .. " + Timestamps.format(to);
    String took = String.format(Locale.ROOT, "%.1f s, %.0f events/s", r.elapsed().toNanos() / 1e9, r.rate());
    if (r.dryRun()) {
      stderr.println("dry run: " + r.published() + " events selected from " + r.recordsRead() + " records of "
          + replaySource + " (" + range + "); batch id " + r.batchId() + "; nothing was published (" + took + ")");
    } else {
      String destination = kafkaBootstrap != null ? "Kafka at " + kafkaBootstrap
          : rabbitUri != null ? publisher.toString() // the exchange, and the URI without its password
          : "NATS stream " + natsStream;
      stderr.println("published " + r.published() + " events to " + destination + " (" + range
          + ") from " + r.recordsRead() + " records of " + replaySource + (r.duplicates() == 0 ? ""
          : "; " + r.duplicates() + " of them dropped by " + (kafkaBootstrap != null ? "Kafka" : "JetStream")
          + " as duplicates of an earlier run of this batch") + "; batch id " + r.batchId() + " (" + took + ")");
    }
  }

  private int fail(Exception e) {
    if (e instanceof ReplayPublishException p && natsUrl == null && kafkaBootstrap == null && rabbitUri == null) {
      stderr.println("mic-events-replay: the dry run failed, its list on stdout is incomplete: "
          + p.getCause().getMessage());
      return PUBLICATION_FAILED;
    }
    if (e instanceof ReplayPublishException p) {
      stderr.println("mic-events-replay: publication failed: " + p.getMessage());
      if (p.firstUnpublishedId() != null) {
        // before the first event (e.g. NATS unreachable) nothing was published: there is nothing to resume
        stderr.println("mic-events-replay: to resume, run the same command with --batch-id " + p.batchId());
      }
      return PUBLICATION_FAILED;
    }
    if (e instanceof UnpublishableEventException u) {
      stderr.println("mic-events-replay: nothing was published: " + u.getMessage());
      return BAD_INPUT;
    }
    if (e instanceof ReplayConfigurationException c) {
      String flag = (kafkaBootstrap != null ? KAFKA_OPTIONS : rabbitUri != null ? RABBITMQ_OPTIONS : NATS_OPTIONS)
          .getOrDefault(c.option(), c.option());
      stderr.println("mic-events-replay: " + flag + ": " + c.getMessage());
      return BAD_INPUT;
    }
    if (e instanceof ReplayInputException) {
      stderr.println("mic-events-replay: cannot read the archive: " + e.getMessage());
      return BAD_INPUT;
    }
    if (e instanceof InterruptedException) {
      Thread.currentThread().interrupt();
      stderr.println("mic-events-replay: interrupted");
      return PUBLICATION_FAILED;
    }
    stderr.println("mic-events-replay: unexpected error: " + e);
    e.printStackTrace(stderr);
    return PUBLICATION_FAILED;
  }

  static final class InstantConverter implements ITypeConverter<Instant> {
    @Override
    public Instant convert(String value) {
      try {
        return Timestamps.parse(value);
      } catch (IllegalArgumentException e) {
        throw new CommandLine.TypeConversionException(e.getMessage());
      }
    }
  }
}
