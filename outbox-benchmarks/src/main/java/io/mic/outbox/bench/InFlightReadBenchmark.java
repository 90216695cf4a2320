package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * What a read without claims costs PostgreSQL beside the events still in flight, which it leaves out: a
 * pipelined worker holds up to two batches, several workers more. The store reads a batch of 500 from a
 * backlog (default 100,000 events) while the first {@code n} events in dispatch order are in flight, many
 * times on one connection, as a dispatcher's reader does (so pgjdbc prepares the statement on the server
 * from its fifth execution, and PostgreSQL may keep a generic plan for it). Measured: the server process's
 * CPU per read ({@code /proc/<backend pid>/stat}, so the database must run on this machine), the wall
 * time per read, and the reading thread's CPU per read in this JVM (the driver and the store decoding the rows);
 * the baseline is the same read with nothing in flight, measured in the same run. Beside each
 * count in flight, the same read leaving out as many ids of no event: it takes in and hashes the ids but meets
 * none of their rows, which tells the cost of the ids themselves from the cost of stepping over the rows in flight.
 * In throughput mode, also the read that goes on after the last event in flight ({@code fetchPendingAfter}), as
 * a dispatcher's reads of a backlog do between its reads from the start: it starts after their rows, and so
 * need not take in their ids.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.InFlightReadBenchmark \
 *      [--url U] [--user U] [--password P] [--events 100000] [--in-flight 0,500,1000,2500] [--reads 200]
 *      [--rounds 3] [--out bench-results/in-flight-read.md]
 * </pre>
 */
public final class InFlightReadBenchmark {
  private static final int BATCH = 500;
  private static final ThreadMXBean THREAD_CPU = ManagementFactory.getThreadMXBean();

  private final Map<String, String> options;
  private final HikariDataSource dataSource;
  /**
   * Per mode and number in flight: server CPU ms per read, wall ms per read and this JVM's CPU ms per read (the
   * reading thread's: the driver and the store decoding the rows), one triple per round.
   */
  private final Map<String, List<double[]>> results = new LinkedHashMap<>();

  private InFlightReadBenchmark(Map<String, String> options) {
    this.options = options;
    this.dataSource = BenchSupport.postgresPool(options, 1); // one connection: one server process to measure
  }

  public static void main(String[] args) throws Exception {
    InFlightReadBenchmark bench = new InFlightReadBenchmark(BenchSupport.parse(args));
    try {
      bench.run();
    } finally {
      bench.dataSource.close();
    }
  }

  private void run() throws Exception {
    int events = Integer.parseInt(options.getOrDefault("events", "100000"));
    int reads = Integer.parseInt(options.getOrDefault("reads", "200"));
    int rounds = Integer.parseInt(options.getOrDefault("rounds", "3"));
    List<Integer> inFlight = new ArrayList<>(List.of(0)); // the baseline first
    for (String n : options.getOrDefault("in-flight", "0,500,1000,2500").split(",")) {
      int count = Integer.parseInt(n.trim());
      if (count > 0) {
        inFlight.add(count);
      }
    }
    String table = "bench_in_flight_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    try {
      BenchSupport.appendBacklog(dataSource, store, table, BenchSupport.orders(events, "order.created"));
      int backend = backendPid();
      for (int round = 1; round <= rounds; round++) {
        System.err.printf("round %d/%d%n", round, rounds);
        for (boolean ordered : new boolean[] {false, true}) {
          for (int n : inFlight) {
            for (Read read : Read.values()) {
              if (n > 0 || read == Read.IN_FLIGHT) {
                if (!ordered || read == Read.IN_FLIGHT || read == Read.ABSENT) {
                  measure(store, ordered, n, read, reads, backend);
                }
              }
            }
          }
        }
      }
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
    }
    String report = report(events, reads, rounds);
    System.out.println(report);
    BenchSupport.write(Path.of(options.getOrDefault("out", "bench-results/in-flight-read.md")), report);
  }

  /** The three reads beside {@code n} ids. */
  private enum Read {
    /** From the start, leaving out the first {@code n} events in dispatch order. */
    IN_FLIGHT(" in flight"),
    /** From the start, leaving out as many ids of no event, which the read takes in and hashes but never meets. */
    ABSENT(" ids of no event"),
    /** After the last of the first {@code n} events, leaving them out too. */
    AFTER(" in flight, going on after them");

    final String label;

    Read(String label) {
      this.label = label;
    }
  }

  /** {@code reads} reads of a batch beside {@code n} ids, as {@code read} says. */
  private void measure(JdbcOutboxStore store, boolean ordered, int n, Read read, int reads, int backend)
      throws SQLException {
    List<OutboxEvent> first = read == Read.ABSENT ? List.of() : first(store, n, ordered);
    Set<UUID> ids = read == Read.ABSENT ? absent(n) : ids(first);
    long cpu = CpuSplit.cpuMillis(backend);
    long clientCpu = THREAD_CPU.getCurrentThreadCpuTime();
    long t0 = System.nanoTime();
    for (int i = 0; i < reads; i++) {
      List<OutboxEvent> batch = read == Read.AFTER
          ? store.fetchPendingAfter(first.get(first.size() - 1), BATCH, Set.of(), first)
          : store.fetchPending(BATCH, ordered, Set.of(), ids);
      if (batch.size() != BATCH) {
        throw new IllegalStateException("a read returned less than " + BATCH + " events");
      }
    }
    double wallMs = (System.nanoTime() - t0) / 1e6 / reads;
    double cpuMs = (CpuSplit.cpuMillis(backend) - cpu) / (double) reads;
    double clientMs = (THREAD_CPU.getCurrentThreadCpuTime() - clientCpu) / 1e6 / reads;
    String key = (ordered ? "ordered" : "throughput") + " mode, " + n + read.label;
    results.computeIfAbsent(key, k -> new ArrayList<>()).add(new double[] {cpuMs, wallMs, clientMs});
    System.err.printf("  %-45s %7.3f ms of server CPU, %7.3f of this JVM's, %7.3f ms per read%n", key, cpuMs,
        clientMs, wallMs);
  }

  private static Set<UUID> absent(int n) {
    Set<UUID> ids = new LinkedHashSet<>();
    while (ids.size() < n) {
      ids.add(UUID.randomUUID());
    }
    return ids;
  }

  /** The first {@code n} events in dispatch order: what the reads before this one handed out. */
  private static List<OutboxEvent> first(JdbcOutboxStore store, int n, boolean ordered) {
    return n == 0 ? List.of() : store.fetchPending(n, ordered, Set.of());
  }

  private static Set<UUID> ids(List<OutboxEvent> events) {
    Set<UUID> ids = new LinkedHashSet<>();
    events.forEach(e -> ids.add(e.id()));
    return ids;
  }

  private int backendPid() throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT pg_backend_pid()")) {
      rs.next();
      return rs.getInt(1);
    }
  }

  private String report(int events, int reads, int rounds) {
    StringBuilder md = new StringBuilder("# A read without claims beside the events in flight (PostgreSQL)\n\n");
    md.append("Run ").append(Instant.now()).append(", Java ").append(System.getProperty("java.version"))
        .append(". ").append(events).append(" pending events, reads of ").append(BATCH).append(", ").append(reads)
        .append(" reads per cell and round on one connection, ").append(rounds)
        .append(" rounds; medians. Baseline: the same read with nothing in flight. \"N ids of no event\": the read leaves"
        + " out N ids that match no row, so it takes in and hashes them but steps over no row in flight; \"going on"
        + " after them\": the read starts after the last event in flight (fetchPendingAfter), past their rows.\n\n");
    md.append("| read | server CPU per read (ms) | ratio to nothing in flight | wall time per read (ms) |"
        + " this JVM's CPU per read (ms) |\n");
    md.append("|---|---:|---:|---:|---:|\n");
    Map<String, Double> baseline = new LinkedHashMap<>();
    results.forEach((key, values) -> {
      double cpu = BenchSupport.median(values.stream().map(v -> v[0]).toList());
      double wall = BenchSupport.median(values.stream().map(v -> v[1]).toList());
      double client = BenchSupport.median(values.stream().map(v -> v[2]).toList());
      String mode = key.substring(0, key.indexOf(','));
      baseline.putIfAbsent(mode, cpu);
      md.append(String.format("| %s | %.2f | %.2f | %.2f | %.2f |%n", key, cpu, cpu / baseline.get(mode), wall,
          client));
    });
    return md.toString();
  }
}
