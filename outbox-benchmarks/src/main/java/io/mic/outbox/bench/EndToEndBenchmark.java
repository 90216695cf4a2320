package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * End to end, table to broker with marks: {@link AsyncOutboxDispatcher} on PostgreSQL publishing through the
 * broker module's publisher, against the broker's raw client publishing the same messages (destination,
 * headers, message id) with the same window of outstanding acknowledgements, in the same run. Throughput
 * and ordered mode, 1 and 2 workers, pipelined and one step at a time, with claims as leases ("claim") and
 * held by transactions ("transactional claim", {@code transactionalClaims(true)}); and without claims (the
 * default mode), pipelined and one step at a time. Beside them the same
 * dispatcher without claims over {@link InMemoryOutboxStore} ("in-memory store, no database"): what the
 * dispatcher and the publisher cost without a database's reads and marks, throughput mode; {@code --in-memory
 * false} leaves them out.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.EndToEndBenchmark
 *      [--broker nats|rabbitmq|kafka] [--url jdbc:postgresql://127.0.0.1:5432/test]
 *      [--nats nats://127.0.0.1:4222] [--rabbitmq amqp://guest:guest@127.0.0.1:5672] [--kafka HOST:PORT]
 *      [--events 100000] [--batch 500] [--window 256] [--rounds 3] [--out bench-results/end-to-end-BROKER.md]
 *      [--workers 1,2] [--scenarios "2 workers, pipelined"] [--database-cpus 0] [--delete-on-dispatch true]
 *      [--in-memory false] [--warm-up auto|N] [--connections 2,1] [--quiet 10]
 * </pre>
 *
 * <p>{@code --scenarios} runs only the dispatcher scenarios whose name contains one of its texts, separated by
 * {@code ;} (the raw baseline always runs): with a Flight Recording
 * ({@code -XX:StartFlightRecording=settings=profile,filename=e2e.jfr}) and {@link JfrSplit}, it profiles one
 * scenario alone.
 *
 * <p>{@code --database-cpus} gives the local PostgreSQL those CPUs alone and the broker and this JVM the rest
 * for the run ({@link CpuPinning}, as root), as a database server has cores of its own in production; without
 * it every process shares every core, and on a small machine the database's share is what the outbox loses.
 *
 * <p>{@code --connections 2,1} (NATS) runs each dispatcher scenario once per count of the publisher's
 * connections, named by it; without it, with the publisher's default. Against NATS the raw client also runs on
 * two connections, the events split between them, beside the baseline.
 *
 * <p>{@code --delete-on-dispatch true} builds the library's store with {@code deleteOnDispatch(true)}: each
 * mark deletes its rows instead of keeping them as {@code DISPATCHED}.
 */
public final class EndToEndBenchmark {
  /** One broker's side of the benchmark: its raw client and the library's publisher for it. */
  interface Broker extends AutoCloseable {
    /** The broker, its version and how messages are kept, for the report. */
    String describe();

    /** The name of the raw scenario. */
    String raw();

    /**
     * Publishes the events with the raw client as the raw scenario {@code scenario} ({@link #raw()}: the same
     * window as the publisher; or one of {@link #extraRaw()}), waiting for every acknowledgement.
     */
    void publishRaw(List<OutboxEvent> events, String scenario) throws Exception;

    /** Further raw scenarios reported beside the baseline, without a ratio of their own. */
    default List<String> extraRaw() {
      return List.of();
    }

    /** The library's publisher, closed after the scenario. */
    Publisher publisher() throws Exception;

    /**
     * The publisher's variants the dispatcher scenarios run with, each named by what ends the scenario's name
     * (e.g. {@code ", 1 connection"}); the one variant {@code ""} unless the broker has options to compare.
     */
    default List<String> variants() {
      return List.of("");
    }

    /** The publisher of one of {@link #variants()}, closed after the scenario. */
    default Publisher publisher(String variant) throws Exception {
      return publisher();
    }

    /** Checks that the broker holds exactly {@code expected} messages from the last scenario, then empties it. */
    void checkAndReset(int expected) throws Exception;
  }

  /** A broker module's publisher and what closes it. */
  record Publisher(BatchDispatchFn fn, AutoCloseable resource) implements AutoCloseable {
    @Override
    public void close() throws Exception {
      resource.close();
    }
  }

  /** Ends the name of a scenario over {@link InMemoryOutboxStore}. */
  private static final String IN_MEMORY = ", in-memory store (no database)";
  /** {@code --warm-up auto}: at least this many rounds, at most {@link #MAX_WARM_UP}. */
  private static final int MIN_WARM_UP = 2;
  private static final int MAX_WARM_UP = 12;
  /** {@code --warm-up auto} ends after a round in which the JIT compilers' time (summed) was less of its own. */
  private static final double JIT_SETTLED = 0.01;
  /** A quiet machine ({@code --quiet}): at most this share of its cores busy over this window. */
  private static final Duration QUIET_WINDOW = Duration.ofMillis(200);
  private static final double QUIET_SHARE = 0.05;

  private final Map<String, String> options;
  private final int events;
  private final int batch;
  private final int window;
  /** Workers per dispatcher scenario ({@code --workers}, default 1 and 2). */
  private final int[] workerCounts;
  private final HikariDataSource dataSource;
  private final Map<String, List<Double>> rates = new LinkedHashMap<>();
  /** Per scenario, CPU ms per 1,000 events of each process group, summed over rounds. */
  private final Map<String, Map<String, Double>> cpu = new LinkedHashMap<>();
  private boolean warmingUp;
  /** Per scenario, the benchmark JVM's CPU ms per 1,000 events by thread group ({@link ThreadCpu}), summed over rounds. */
  private final Map<String, Map<String, Double>> threadCpu = new LinkedHashMap<>();
  /** Per scenario, the broker's read system calls per 1,000 events, summed over rounds. */
  private final Map<String, Double> brokerReads = new LinkedHashMap<>();
  /** What the machine had used when the last scenario's clock started, and when it stopped. */
  private Usage before;
  private Usage after;
  /** The machine's cores, counted before any pinning. */
  private final int cores = Runtime.getRuntime().availableProcessors();
  private String placement = "every process on every core";
  /** {@code --delete-on-dispatch true}: the library's marks delete the rows ({@code JdbcOutboxStore.Builder}). */
  private final boolean deleteOnDispatch;
  /**
   * {@code --warm-up N}: rounds of every scenario before the measured ones, not recorded; {@code auto} (the
   * default): rounds until the JIT compilers' time, summed over their threads, is under {@link #JIT_SETTLED} of
   * a round's, from {@link #MIN_WARM_UP} to {@link #MAX_WARM_UP}. After one round the JIT compilers still used 4
   * to 5 ms of CPU per 1,000 events in the dispatcher's rounds (2 to 3 in the raw client's); after three, 0.3 to
   * 1.3 (C2 still compiling pgjdbc's and the dispatcher's per-batch methods) against 0.1 to 0.3; after eight, 0.1
   * to 0.4. A service that runs for hours pays that once.
   */
  private final String warmUp;
  /** The warm-up rounds run, and the JIT compilers' share of the last one's time, for the report. */
  private int warmUpRounds;
  private double lastWarmUpJitShare = Double.NaN;
  /** {@code --in-memory false} leaves out the scenarios over {@link InMemoryOutboxStore}. */
  private final boolean inMemoryScenarios;
  /**
   * {@code --quiet N}: before each scenario's clock starts, wait at most N seconds (default 10; 0: not at all)
   * until the machine is quiet ({@link #QUIET_SHARE} of its cores busy or less over {@link #QUIET_WINDOW}). The
   * raw client's clock started right after the previous scenario's stream was purged, the dispatcher's only
   * after its backlog was appended, so the broker's work after a purge fell into the raw client's rounds alone.
   */
  private final Duration quietAtMost;
  /** Per scenario, how long its rounds waited for a quiet machine, in ms. */
  private final Map<String, List<Long>> quietWaits = new LinkedHashMap<>();
  private long lastQuietWait;

  private EndToEndBenchmark(Map<String, String> options) {
    this.options = options;
    // a run of 20,000 events lasts about a second and measures start-up as much as throughput: the raw NATS
    // client's rounds scattered from 8,700 to 37,800 msg/s there, and from 43,100 to 54,000 at 100,000
    this.events = Integer.parseInt(options.getOrDefault("events", "100000"));
    this.batch = Integer.parseInt(options.getOrDefault("batch", "500"));
    this.window = Integer.parseInt(options.getOrDefault("window", "256"));
    this.workerCounts = Arrays.stream(options.getOrDefault("workers", "1,2").split(",")).map(String::trim)
        .mapToInt(Integer::parseInt).toArray();
    // transactional claims hold a connection per batch in flight, up to three per worker through NATS
    int mostWorkers = Arrays.stream(workerCounts).max().orElse(1);
    this.dataSource = BenchSupport.postgresPool(options, Math.max(8, 3 * mostWorkers + 4));
    this.deleteOnDispatch = Boolean.parseBoolean(options.getOrDefault("delete-on-dispatch", "false"));
    this.inMemoryScenarios = Boolean.parseBoolean(options.getOrDefault("in-memory", "true"));
    this.warmUp = options.getOrDefault("warm-up", "auto");
    String quiet = options.getOrDefault("quiet", "10");
    if (!quiet.matches("\\d{1,3}")) {
      throw new IllegalArgumentException("--quiet must be the seconds to wait for a quiet machine, 0 to 999, was "
          + quiet);
    }
    this.quietAtMost = Duration.ofSeconds(Integer.parseInt(quiet));
    if (!warmUp.equals("auto") && !warmUp.matches("\\d{1,3}")) {
      throw new IllegalArgumentException("--warm-up must be auto or a number of rounds, was " + warmUp);
    }
  }

  public static void main(String[] args) throws Exception {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
    Map<String, String> options = BenchSupport.parse(args);
    String name = options.getOrDefault("broker", "nats");
    EndToEndBenchmark bench = new EndToEndBenchmark(options);
    if (options.containsKey("connections") && !name.equals("nats")) {
      throw new IllegalArgumentException("--connections counts the NATS publisher's connections; leave it out with"
          + " --broker " + name);
    }
    String databaseCpus = options.get("database-cpus");
    try (CpuPinning pinning = databaseCpus == null ? null : CpuPinning.pin(databaseCpus);
        Broker broker = switch (name) {
      case "nats" -> new NatsSide(options.getOrDefault("nats", "nats://127.0.0.1:4222"), bench.window,
          options.get("connections"));
      case "rabbitmq" -> new RabbitMqSide(options.getOrDefault("rabbitmq", "amqp://guest:guest@127.0.0.1:5672"),
          bench.window);
      case "kafka" -> new KafkaSide(required(options, "kafka", "--kafka HOST:PORT, e.g. 127.0.0.1:9092"),
          bench.window);
      default -> throw new IllegalArgumentException("--broker must be nats, rabbitmq or kafka, was " + name);
    }) {
      if (pinning != null) {
        bench.placement = pinning.describe();
      }
      bench.run(broker, name, Integer.parseInt(options.getOrDefault("rounds", "3")));
    } finally {
      bench.dataSource.close();
    }
  }

  private static String required(Map<String, String> options, String name, String hint) {
    String v = options.get(name);
    if (v == null || v.isBlank()) {
      throw new IllegalArgumentException("--" + name + " is required: " + hint);
    }
    return v;
  }

  private void run(Broker broker, String name, int rounds) throws Exception {
    warmingUp = true; // every scenario, not recorded: the JIT compiles the paths the rounds measure
    warmUp(broker);
    warmingUp = false;
    for (int round = 1; round <= rounds; round++) {
      System.err.printf("round %d/%d%n", round, rounds);
      round(broker);
    }
    String report = report(broker);
    System.out.println(report);
    Path out = Path.of(options.getOrDefault("out", "bench-results/end-to-end-" + name + ".md"));
    if (out.getParent() != null) {
      Files.createDirectories(out.getParent());
    }
    Files.writeString(out, report);
    System.err.println("written to " + out.toAbsolutePath());
  }

  /**
   * The unrecorded rounds: {@code --warm-up N} of them, or with {@code auto} until a round in which the JIT
   * compilers' time, summed over their threads, was under {@link #JIT_SETTLED} of the round's (three when this
   * JVM cannot tell).
   */
  private void warmUp(Broker broker) throws Exception {
    CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
    boolean auto = warmUp.equals("auto");
    boolean measurable = jit != null && jit.isCompilationTimeMonitoringSupported();
    int rounds = !auto ? Integer.parseInt(warmUp) : measurable ? MAX_WARM_UP : 3;
    while (warmUpRounds < rounds) {
      long compiled = measurable ? jit.getTotalCompilationTime() : 0;
      long start = System.nanoTime();
      round(broker);
      warmUpRounds++;
      if (measurable) {
        lastWarmUpJitShare = (jit.getTotalCompilationTime() - compiled) / ((System.nanoTime() - start) / 1e6);
        System.err.printf("warm-up round %d: JIT compilation %.1f %% of its time (summed over the compiler"
            + " threads)%n", warmUpRounds, lastWarmUpJitShare * 100);
        if (auto && warmUpRounds >= MIN_WARM_UP && lastWarmUpJitShare < JIT_SETTLED) {
          return;
        }
      }
    }
  }

  /** Every selected scenario once: the raw client first, then the dispatcher's. */
  private void round(Broker broker) throws Exception {
    record(broker.raw(), raw(broker, broker.raw()));
    for (String extra : broker.extraRaw()) {
      record(extra, raw(broker, extra));
    }
    for (Claims claims : Claims.values()) {
      for (boolean ordered : new boolean[] {false, true}) {
        for (int workers : workerCounts) {
          for (boolean pipelined : new boolean[] {false, true}) {
            for (String variant : broker.variants()) {
              String scenario = scenario(claims, ordered, workers, pipelined) + variant;
              // ordered mode needs claims for 2 workers
              if ((claims != Claims.NONE || workers == 1 || !ordered) && selected(scenario)) {
                record(scenario,
                    dispatcher(broker, scenario, variant, claims, ordered, workers, pipelined, false));
              }
            }
          }
        }
      }
    }
    for (int workers : workerCounts) {
      for (String variant : broker.variants()) {
        String scenario = scenario(Claims.NONE, false, workers, true) + variant + IN_MEMORY;
        if (inMemoryScenarios && selected(scenario)) {
          record(scenario, dispatcher(broker, scenario, variant, Claims.NONE, false, workers, true, true));
        }
      }
    }
  }

  /** The recording's mark of a scenario's timed part; the warm-up's are named so. */
  private ScenarioEvent timed(String scenario) {
    return new ScenarioEvent(warmingUp ? "warm-up: " + scenario : scenario);
  }

  private boolean selected(String scenario) {
    String only = options.get("scenarios");
    return only == null || Arrays.stream(only.split(";")).anyMatch(s -> scenario.contains(s.trim()));
  }

  /** How the dispatcher takes its batches: claims leased in the rows, claims held by transactions, or reads. */
  private enum Claims {
    LEASE("claim"), TRANSACTION("transactional claim"), NONE("no claim");

    private final String text;

    Claims(String text) {
      this.text = text;
    }
  }

  private static String scenario(Claims claims, boolean ordered, int workers, boolean pipelined) {
    return "AsyncOutboxDispatcher, " + claims.text + ", " + (ordered ? "ordered" : "throughput")
        + " mode, " + workers
        + (workers == 1 ? " worker" : " workers") + (pipelined ? ", pipelined" : ", one step at a time");
  }

  /**
   * The events as the store hands them to a publisher: appended, so with their sequence (1: each aggregate
   * has one event) and their occurred-at time, which the envelope's headers carry. Events built in memory
   * lack both, and the raw client would publish two headers fewer than the library.
   */
  private static List<OutboxEvent> asStored(List<OutboxEvent> built) {
    Instant appended = Instant.now().truncatedTo(ChronoUnit.MICROS);
    return built.stream().map(e -> e.toStored().createdAt(appended).occurredAt(appended).sequence(1).build())
        .toList();
  }

  private double raw(Broker broker, String scenario) throws Exception {
    List<OutboxEvent> list = asStored(BenchSupport.orders(events, "order.raw"));
    awaitQuiet();
    ScenarioEvent timed = timed(scenario);
    before = Usage.now();
    long t0 = System.nanoTime();
    timed.begin();
    broker.publishRaw(list, scenario);
    timed.commit();
    double rate = events / ((System.nanoTime() - t0) / 1e9);
    after = Usage.now();
    broker.checkAndReset(events);
    return rate;
  }

  /**
   * One dispatcher scenario over a new table with the backlog appended, or with {@code inMemory} over an
   * {@link InMemoryOutboxStore} holding the same events.
   */
  private double dispatcher(Broker broker, String scenario, String variant, Claims claims, boolean ordered,
      int workers, boolean pipelined, boolean inMemory) throws Exception {
    String table = "bench_e2e_" + UUID.randomUUID().toString().substring(0, 8);
    List<OutboxEvent> backlog = BenchSupport.orders(events, "order." + (ordered ? "ordered" : "throughput"));
    OutboxStore store;
    if (inMemory) {
      InMemoryOutboxStore memory = new InMemoryOutboxStore();
      memory.append(asStored(backlog));
      store = memory;
    } else {
      JdbcOutboxStore jdbc = JdbcOutboxStore.builder().dataSource(dataSource).table(table)
          .deleteOnDispatch(deleteOnDispatch).transactionalClaims(claims == Claims.TRANSACTION).build();
      jdbc.createSchema();
      BenchSupport.appendBacklog(dataSource, jdbc, table, backlog);
      store = jdbc;
    }
    try {
      CountDownLatch drained = new CountDownLatch(events);
      double rate;
      try (Publisher publisher = broker.publisher(variant);
          AsyncOutboxDispatcher d = AsyncOutboxDispatcher.builder().store(store).dispatchFn(publisher.fn())
              .useClaim(claims != Claims.NONE).preserveAggregateOrder(ordered).workers(workers).batchSize(batch).pipelined(pipelined)
              .pollInterval(Duration.ofMillis(50)).listener(new OutboxListener() {
                @Override public void onDispatched(OutboxEvent event, Duration publishTime) {
                  drained.countDown();
                }
              }).build()) {
        awaitQuiet();
        ScenarioEvent timed = timed(scenario);
        before = Usage.now();
        long t0 = System.nanoTime();
        timed.begin();
        d.start();
        if (!drained.await(5, TimeUnit.MINUTES)) {
          throw new IllegalStateException(drained.getCount() + " events left after 5 minutes");
        }
        timed.commit();
        rate = events / ((System.nanoTime() - t0) / 1e9);
        after = Usage.now();
      }
      broker.checkAndReset(events);
      return rate;
    } finally {
      if (!inMemory) {
        BenchSupport.dropOutbox(dataSource, table);
      }
    }
  }

  /** Waits for a quiet machine ({@link #quietAtMost}), and keeps how long for the scenario's record. */
  private void awaitQuiet() throws InterruptedException {
    lastQuietWait = quietAtMost.isZero() ? 0
        : CpuSplit.awaitQuiet(quietAtMost, QUIET_WINDOW, QUIET_SHARE).toMillis();
  }

  /** Records a scenario's rate and the CPU used while its clock ran. */
  private void record(String scenario, double rate) {
    if (warmingUp) {
      System.err.printf("  warm-up: %-66s %,10.0f events/s%n", scenario, rate);
      return;
    }
    Map<String, Double> used = CpuSplit.perThousand(before.processes(), after.processes(), events);
    used.forEach((group, ms) -> cpu.computeIfAbsent(scenario, k -> new LinkedHashMap<>()).merge(group, ms, Double::sum));
    ThreadCpu.perThousand(before.threads(), after.threads(), events).forEach((group, ms) ->
        threadCpu.computeIfAbsent(scenario, k -> new LinkedHashMap<>()).merge(group, ms, Double::sum));
    brokerReads.merge(scenario, (after.brokerReads() - before.brokerReads()) * 1000.0 / events, Double::sum);
    rates.computeIfAbsent(scenario, k -> new ArrayList<>()).add(rate);
    quietWaits.computeIfAbsent(scenario, k -> new ArrayList<>()).add(lastQuietWait);
    System.err.printf("  %-75s %,10.0f events/s%n", scenario, rate);
  }

  private double median(String scenario) {
    return BenchSupport.median(rates.get(scenario));
  }

  private String report(Broker broker) {
    StringBuilder md = new StringBuilder("# End to end: PostgreSQL to ").append(broker.describe()).append("\n\n");
    md.append("Run ").append(Instant.now()).append(" on ").append(cores).append(" cores (").append(placement)
        .append("), Java ").append(System.getProperty("java.version")).append(", load average ")
        .append(BenchSupport.loadAverage()).append(" at the end. ").append(events)
        .append(" events over as many aggregates, batch ").append(batch).append(", window ").append(window)
        .append(deleteOnDispatch ? ", marks delete the rows (deleteOnDispatch)" : ", marks keep the rows (DISPATCHED)")
        .append("; time from start until the last mark (the raw client: until the last acknowledgement). ")
        .append(warmUpRounds).append(" unrecorded warm-up round(s) of every scenario first")
        .append(Double.isNaN(lastWarmUpJitShare) ? "" : String.format(
            " (JIT compilation in the last: %.1f %% of its time, summed over the compiler threads)",
            lastWarmUpJitShare * 100))
        .append(". ").append(quietAtMost.isZero() ? "Each scenario's clock started as soon as it was set up."
            : "Each scenario's clock started once the machine was quiet (at most " + Math.round(QUIET_SHARE * 100)
                + " % of its cores busy over " + QUIET_WINDOW.toMillis() + " ms), or after " + quietAtMost.toSeconds()
                + " s; the last column says how long each round waited.")
        .append("\n\n");
    md.append("| scenario | median events/s | all rounds | ratio to raw | waits for a quiet machine (ms) |\n")
        .append("|---|---:|---|---:|---|\n");
    rates.forEach((k, v) -> md.append("| ").append(k).append(" | ").append(String.format("%,.0f", median(k)))
        .append(" | ").append(v.stream().map(x -> String.format("%,.0f", x)).toList()).append(" | ")
        .append(String.format("%.2f", median(k) / median(broker.raw()))).append(" | ")
        .append(quietWaits.get(k)).append(" |\n"));
    if (CpuSplit.available()) {
      md.append("\nCPU time per 1,000 events (ms, mean of the rounds; from /proc, so the machine's other load is in"
          + " 'other processes'), and the broker's read system calls per 1,000 events (fewer: the messages arrived in"
          + " larger pieces):\n\n| scenario | ").append(String.join(" | ", cpu.values().iterator().next().keySet()))
          .append(" | total | broker's reads per 1,000 |\n|---|")
          .append("---:|".repeat(cpu.values().iterator().next().size() + 2)).append("\n");
      cpu.forEach((k, groups) -> {
        int rounds = rates.get(k).size();
        md.append("| ").append(k).append(" | ");
        groups.values().forEach(ms -> md.append(String.format("%.0f", ms / rounds)).append(" | "));
        md.append(String.format("%.0f", groups.values().stream().mapToDouble(Double::doubleValue).sum() / rounds))
            .append(" | ").append(String.format("%.0f", brokerReads.get(k) / rounds)).append(" |\n");
      });
    }
    if (CpuSplit.available() && ThreadCpu.available()) {
      md.append("\nThe benchmark JVM's CPU time per 1,000 events (ms, mean of the rounds) by thread: the threads that"
          + " publish (the dispatcher's workers; the raw client's loop), a pipelined worker's read and mark threads"
          + " (with claims one thread does both: under reads), the other Java threads, garbage collection, JIT"
          + " compilation, and the rest of the process:\n\n| scenario | ").append(String.join(" | ", ThreadCpu.GROUPS))
          .append(" | rest |\n|---|").append("---:|".repeat(ThreadCpu.GROUPS.length + 1)).append("\n");
      threadCpu.forEach((k, groups) -> {
        int rounds = rates.get(k).size();
        double threads = groups.values().stream().mapToDouble(Double::doubleValue).sum();
        md.append("| ").append(k).append(" | ");
        groups.values().forEach(ms -> md.append(String.format("%.1f", ms / rounds)).append(" | "));
        // the process's ticks (10 ms) against the threads' nanoseconds: a rest within ±0.05 is rounding
        double rest = (cpu.get(k).get(CpuSplit.JVM) - threads) / rounds;
        md.append(String.format("%.1f", Math.abs(rest) < 0.05 ? 0.0 : rest)).append(" |\n");
      });
    }
    return md.toString();
  }

  /**
   * The CPU used so far by each process group ({@link CpuSplit}) and by this JVM's thread groups
   * ({@link ThreadCpu}), and the broker's read system calls.
   */
  private record Usage(Map<String, Long> processes, Map<String, Long> threads, long brokerReads) {
    static Usage now() {
      return new Usage(CpuSplit.snapshot(), ThreadCpu.snapshot(), CpuSplit.brokerReads());
    }
  }
}
