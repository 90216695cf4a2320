package io.mic.outbox.examples;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.DispatchFn;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.DeadLetterQuery;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxDeadLetters;
import java.io.PrintStream;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** The demo's entry point: parses options, then tells the story on the chosen database. */
@Command(name = "outbox-demo", mixinStandardHelpOptions = true, version = "MIC Outbox demo 0.1.0",
    description = {
        "Shows MIC Outbox end to end: orders and their events written in one transaction, a rolled-back order"
            + " whose event never appears, dispatch in per-aggregate order by two claiming workers, a redelivered"
            + " duplicate absorbed by the consumer's inbox, and a poison event that goes to the DLQ and is"
            + " redriven.",
        "Runs on H2 in process and an in-process bus unless --jdbc-url and --nats, --kafka or --rabbitmq name real"
            + " servers; it creates (and first drops) the tables mic_demo_orders, mic_demo_invoices, mic_demo_outbox"
            + " and mic_demo_inbox, and a JetStream stream MIC_DEMO_*, a Kafka topic mic-demo-* or a RabbitMQ"
            + " exchange and queue mic-demo-* that it deletes at the end."},
    exitCodeListHeading = "Exit codes:%n",
    exitCodeList = {"0:the story ran to the end", "1:the story went wrong (a bug: please report it)",
        "2:bad options or an unreachable server"})
public final class OutboxDemo implements Callable<Integer> {
  /** A fresh in-memory database for each run, kept while the pool is open. */
  static final String H2_URL = "jdbc:h2:mem:mic-outbox-demo-%s;DB_CLOSE_DELAY=-1;LOCK_TIMEOUT=10000";

  @Option(names = "--jdbc-url", paramLabel = "URL",
      description = "run on this database, e.g. jdbc:postgresql://127.0.0.1:5432/test (default: H2 in process)")
  String jdbcUrl;

  @Option(names = "--jdbc-user", paramLabel = "USER", description = "database user (default: postgres for"
      + " PostgreSQL, root for MariaDB/MySQL, sa for H2)")
  String jdbcUser;

  @Option(names = "--jdbc-password", paramLabel = "PASSWORD", description = "database password (default: empty)",
      arity = "0..1", interactive = false)
  String jdbcPassword = "";

  private final PrintStream out;

  public OutboxDemo() {
    this(System.out);
  }

  OutboxDemo(PrintStream out) {
    this.out = out;
  }

  @Option(names = "--nats", paramLabel = "URL",
      description = "publish to NATS JetStream at this URL, e.g. nats://127.0.0.1:4222 (default: an in-process bus)")
  String natsUrl;

  @Option(names = "--kafka", paramLabel = "BOOTSTRAP",
      description = "publish to Apache Kafka at these bootstrap servers, e.g. 127.0.0.1:9092")
  String kafkaBootstrap;

  @Option(names = "--rabbitmq", paramLabel = "URI",
      description = "publish to RabbitMQ at this URI, e.g. amqp://guest:guest@127.0.0.1:5672")
  String rabbitUri;

  @Option(names = "--verbose", description = "show the library's own log lines (INFO and above)")
  boolean verbose;

  public static void main(String[] args) {
    boolean verbose = java.util.Arrays.asList(args).contains("--verbose");
    // set before any logger exists: the story is the output, the library's logs are opt-in
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", verbose ? "info" : "error");
    System.exit(run(args, System.out, System.err));
  }

  /** Runs the command; returns the exit code instead of exiting, for tests. */
  static int run(String[] args, PrintStream out, PrintStream err) {
    CommandLine cli = new CommandLine(new OutboxDemo(out));
    cli.setOut(new java.io.PrintWriter(out, true));
    cli.setErr(new java.io.PrintWriter(err, true));
    cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
      err.println("outbox-demo: " + e.getMessage());
      return e instanceof DemoSetupException ? 2 : 1;
    });
    return cli.execute(args);
  }

  @Override
  public Integer call() throws Exception {
    if (natsUrl != null && !natsUrl.matches("(nats|tls)://.+")) {
      throw new DemoSetupException("--nats must be a NATS URL such as nats://127.0.0.1:4222, was '"
          + Secrets.redact(natsUrl) + "'");
    }
    if (rabbitUri != null && !rabbitUri.matches("amqps?://.*")) {
      throw new DemoSetupException("--rabbitmq must be an AMQP URI such as amqp://guest:guest@127.0.0.1:5672, was '"
          + Secrets.redact(rabbitUri) + "'");
    }
    if ((natsUrl != null ? 1 : 0) + (kafkaBootstrap != null ? 1 : 0) + (rabbitUri != null ? 1 : 0) > 1) {
      throw new DemoSetupException("--nats, --kafka and --rabbitmq exclude each other: choose one bus");
    }
    try (HikariDataSource dataSource = connect(); Bus bus = natsUrl != null ? new NatsBus(natsUrl)
        : kafkaBootstrap != null ? new KafkaBus(kafkaBootstrap) : rabbitUri != null ? new RabbitMqBus(rabbitUri)
        : new InProcessBus()) {
      new Story(dataSource, bus, out).tell();
      return 0;
    }
  }

  private HikariDataSource connect() {
    String url = jdbcUrl != null ? jdbcUrl : String.format(H2_URL, java.util.UUID.randomUUID());
    if (!url.startsWith("jdbc:")) {
      throw new DemoSetupException("--jdbc-url must be a JDBC URL such as jdbc:postgresql://127.0.0.1:5432/test,"
          + " was '" + Secrets.redact(url) + "'");
    }
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(url);
    config.setUsername(jdbcUser != null ? jdbcUser : defaultUser(url));
    config.setPassword(jdbcPassword);
    config.setMaximumPoolSize(6);
    config.setPoolName("outbox-demo");
    config.setInitializationFailTimeout(2_000);
    try {
      return new HikariDataSource(config);
    } catch (RuntimeException e) {
      Throwable cause = e.getCause() != null ? e.getCause() : e;
      // the driver's message may quote the URL or a part of it (MariaDB: "Incorrect port value : <password>@host")
      throw new DemoSetupException("cannot connect to " + Secrets.redact(url) + ": "
          + new Secrets(url, jdbcPassword).mask(cause.getMessage())
          + " (check that the database runs and that --jdbc-user/--jdbc-password are right)");
    }
  }

  private static String defaultUser(String url) {
    if (url.startsWith("jdbc:postgresql:")) {
      return "postgres";
    }
    return url.startsWith("jdbc:mariadb:") || url.startsWith("jdbc:mysql:") ? "root" : "sa";
  }

  /** Setup failures the user can fix: exit code 2. */
  static final class DemoSetupException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    DemoSetupException(String message) {
      super(message);
    }
  }

  /** The story itself: each step prints what it did and checks what it claims. */
  static final class Story {
    private static final String[] TABLES = {"mic_demo_orders", "mic_demo_invoices", "mic_demo_outbox",
        "mic_demo_outbox_locks", "mic_demo_inbox"};
    private final HikariDataSource dataSource;
    private final Bus bus;
    private final PrintStream out;

    Story(HikariDataSource dataSource, Bus bus, PrintStream out) {
      this.dataSource = dataSource;
      this.bus = bus;
      this.out = out;
    }

    void tell() throws Exception {
      dropTables();
      JdbcOutboxStore outbox = JdbcOutboxStore.builder().dataSource(dataSource).table("mic_demo_outbox").build();
      outbox.createSchema();
      JdbcInbox inbox = JdbcInbox.builder().dataSource(dataSource).table("mic_demo_inbox").build();
      OrderService orders = new OrderService(dataSource, outbox);
      orders.createSchema();
      BillingConsumer billing = new BillingConsumer(dataSource, inbox);
      billing.createSchema();
      out.printf("MIC Outbox demo on %s, publishing to %s%n", outbox.dialect().name(), bus.describe());

      step("write", "");
      for (int i = 1; i <= 3; i++) {
        orders.placeOrder("o-" + i, new BigDecimal(10 * i + ".50"));
        orders.payOrder("o-" + i);
      }
      out.printf("    3 orders placed and paid: %d order rows and %d events, each row committed with its"
          + " event in one transaction%n", orders.countOrders(), total(outbox));

      step("rollback", "");
      orders.placeOrderThatFails("o-4", new BigDecimal("99.00"));
      out.printf("    order o-4 failed before commit: still %d order rows and %d events, neither its row"
          + " nor its event exists%n", orders.countOrders(), total(outbox));
      check(orders.countOrders() == 3 && total(outbox) == 6, "the rolled-back order left a trace");

      step("poison", "");
      orders.placeOrder("o-5", new BigDecimal("-5.00"));
      out.println("    order o-5 has a negative amount: the bus's schema check rejects it");

      Map<String, List<String>> seenByOrder = new ConcurrentHashMap<>();
      AtomicInteger rejected = new AtomicInteger();
      AtomicBoolean refundsAccepted = new AtomicBoolean();
      DispatchFn publish = event -> { // the bus's schema check: a refusal fails the publication
        if (event.payload().contains("\"amount\":-") && !refundsAccepted.get()) {
          rejected.incrementAndGet();
          throw new IllegalArgumentException("schema check: amount must not be negative");
        }
        bus.publisher().dispatch(event);
      };
      for (String topic : List.of("order.placed", "order.paid")) {
        bus.subscribe(topic, message -> {
          if (billing.onMessage(message)) {
            seenByOrder.computeIfAbsent(message.headers().get("x-aggregate-id"), k -> new CopyOnWriteArrayList<>())
                .add(message.topic());
          }
        });
      }
      // a broker may deliver a message twice; the inbox must absorb it
      bus.redeliverOnce(m -> m.topic().equals("order.placed") && m.headers().get("x-aggregate-id").equals("o-1"));

      step("dispatch", "two workers, claims with leases, per-aggregate order");
      List<String> deadLettered = new CopyOnWriteArrayList<>();
      AtomicInteger retries = new AtomicInteger();
      OutboxListener listener = new OutboxListener() {
        @Override public void onRetryScheduled(OutboxEvent e, Duration delay, String error) {
          retries.incrementAndGet();
        }

        @Override public void onDeadLettered(OutboxEvent e, String error) {
          deadLettered.add(e.aggregateId() + " (" + error + ")");
        }
      };
      try (AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(outbox).dispatchFn(publish)
          .useClaim(true).preserveAggregateOrder(true).workers(2).pollInterval(Duration.ofMillis(50))
          .maxAttempts(3).retryBackoff(Duration.ofMillis(100), Duration.ofMillis(200)).listener(listener)
          .name("demo").build()) {
        dispatcher.start();
        awaitSettled(outbox, 6, 1);
        awaitTrue(() -> billing.invoiceRows() == 6 && billing.duplicates() == 1, "the consumer to see every event");
        new TreeMap<>(seenByOrder).forEach((order, topics) ->
            out.printf("    %s: %s%n", order, String.join(" -> ", topics)));
        out.printf("    o-1's order.placed was delivered twice; billing's inbox absorbed %d duplicate(s):"
            + " %d invoice rows for %d events%n", billing.duplicates(), billing.invoiceRows(), billing.applied());
        out.printf("    o-5 was rejected %d times, retried %d times, then moved to the DLQ: %s%n", rejected.get(),
            retries.get(), deadLettered);
        check(billing.duplicates() == 1 && billing.invoiceRows() == 6, "the duplicate was not absorbed");
        for (List<String> topics : seenByOrder.values()) {
          check(topics.equals(List.of("order.placed", "order.paid")), "events of an order came out of order");
        }

        step("redrive", "");
        OutboxDeadLetters deadLetters = OutboxDeadLetters.builder().store(outbox).build();
        List<OutboxEvent> dead = deadLetters.listDeadLetters(DeadLetterQuery.builder().topic("order.placed").build());
        out.printf("    the DLQ holds %d event(s): %s after %d attempts%n", dead.size(),
            dead.get(0).aggregateType() + "/" + dead.get(0).aggregateId(), dead.get(0).attempts());
        refundsAccepted.set(true);
        long redriven = deadLetters.redriveAll();
        dispatcher.wakeUp();
        awaitSettled(outbox, 7, 0);
        awaitTrue(() -> seenByOrder.containsKey("o-5"), "the consumer to see the redriven event");
        out.printf("    the bus now accepts refunds; %d event redriven and dispatched: o-5: %s%n", redriven,
            String.join(" -> ", seenByOrder.get("o-5")));
      }

      Map<OutboxStatus, Long> counts = outbox.countByStatus();
      out.printf("%nSummary: %d events written, %d dispatched, %d retried, %d dead-lettered and redriven,"
          + " %d duplicate absorbed, %d in the DLQ, 0 lost%n", total(outbox), counts.get(OutboxStatus.DISPATCHED),
          retries.get(), deadLettered.size(), billing.duplicates(), counts.get(OutboxStatus.DLQ));
    }

    private void step(String name, String detail) {
      out.printf("%n%s%s%n", name, detail.isEmpty() ? "" : ": " + detail);
    }

    private static long total(JdbcOutboxStore outbox) {
      return outbox.countByStatus().values().stream().mapToLong(Long::longValue).sum();
    }

    private static void awaitSettled(JdbcOutboxStore outbox, long dispatched, long dlq) throws InterruptedException {
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (System.nanoTime() < deadline) {
        Map<OutboxStatus, Long> counts = outbox.countByStatus();
        if (counts.get(OutboxStatus.DISPATCHED) >= dispatched && counts.get(OutboxStatus.DLQ) >= dlq) {
          return;
        }
        Thread.sleep(50);
      }
      throw new IllegalStateException("dispatch did not settle within 30 s: " + outbox.countByStatus());
    }

    @FunctionalInterface
    private interface Condition {
      boolean holds() throws Exception;
    }

    /** Consumers of a real broker see messages a little after the dispatcher marked them. */
    private static void awaitTrue(Condition condition, String what) throws Exception {
      long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
      while (!condition.holds()) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("timed out waiting for " + what);
        }
        Thread.sleep(20);
      }
    }

    private static void check(boolean condition, String failure) {
      if (!condition) {
        throw new IllegalStateException(failure);
      }
    }

    private void dropTables() throws SQLException {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        for (String table : TABLES) {
          s.execute("DROP TABLE IF EXISTS " + table);
        }
      }
    }
  }
}
