package io.mic.outbox.bench;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * 1, 2 and 4 dispatcher <b>processes</b> (separate JVMs, one {@link AsyncOutboxDispatcher} with
 * one worker each, claim mode, batch 500, no-op publisher) drain one backlog on one PostgreSQL, in throughput
 * and in ordered mode. Reports total and per-process events/s, claims that came back empty, leases lost, and
 * in ordered mode checks every aggregate's publication order across the processes (by the wall clock at
 * publication: a successor can only be claimed after its predecessor's mark, which follows its publication).
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.ScaleOutBenchmark \
 *      [--url U] [--events 60000] [--aggregates 3000] [--processes 1,2,4] [--out bench-results/scale-out.md]
 * </pre>
 */
public final class ScaleOutBenchmark {
  private static final int BATCH = 500;

  private final Map<String, String> options;
  private final HikariDataSource dataSource;
  private final List<String> rows = new ArrayList<>();
  private final List<String> loads = new ArrayList<>();
  private final int events;
  private final int aggregates;

  private ScaleOutBenchmark(Map<String, String> options) {
    this.options = options;
    this.dataSource = BenchSupport.postgresPool(options, 4);
    this.events = Integer.parseInt(options.getOrDefault("events", "60000"));
    this.aggregates = Integer.parseInt(options.getOrDefault("aggregates", "3000"));
  }

  public static void main(String[] args) throws Exception {
    ScaleOutBenchmark bench = new ScaleOutBenchmark(BenchSupport.parse(args));
    try (bench.dataSource) {
      bench.run();
    }
  }

  private void run() throws Exception {
    loads.add(BenchSupport.loadAverage());
    for (boolean ordered : new boolean[] {false, true}) {
      for (String p : options.getOrDefault("processes", "1,2,4").split(",")) {
        scenario(Integer.parseInt(p), ordered);
        loads.add(BenchSupport.loadAverage());
      }
    }
    StringBuilder md = new StringBuilder("# Scale-out: dispatcher processes on one PostgreSQL\n\n");
    md.append("Run ").append(Instant.now().truncatedTo(ChronoUnit.SECONDS)).append(" on ")
        .append(Runtime.getRuntime().availableProcessors()).append(" cores, Java ")
        .append(System.getProperty("java.version")).append(", ").append(BenchSupport.postgresSettings(dataSource))
        .append(".\nLoad average (1, 5, 15 min) at the start and after each scenario: ")
        .append(String.join(" / ", loads)).append(".\n").append(String.format("%,d", events))
        .append(" pending events over ").append(String.format("%,d", aggregates))
        .append(" aggregates (appended in order, VACUUM ANALYZE before each drain); each process warms up on 20,000 events of a table")
        .append(" of its own first, then runs one")
        .append(" AsyncOutboxDispatcher, 1 worker, claim mode, batch ").append(BATCH)
        .append(", pipelined, no-op publisher, its own pool. Timed from the start signal to the last publication.\n\n")
        .append("| mode | processes | total events/s | per process events/s | claims | empty claims |")
        .append(" leases lost | duplicates | order violations |\n|---|---:|---:|---|---:|---:|---:|---:|---:|\n");
    rows.forEach(md::append);
    String report = md.toString();
    System.out.println(report);
    BenchSupport.write(Path.of(options.getOrDefault("out", "bench-results/scale-out.md")), report);
  }

  private void scenario(int processes, boolean ordered) throws Exception {
    String table = "bench_scale_" + UUID.randomUUID().toString().substring(0, 8);
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
    try {
      load(store, table);
      List<Process> children = new ArrayList<>();
      List<Thread> readers = new ArrayList<>();
      List<String[]> stats = new ArrayList<>();
      Map<String, List<long[]>> publications = new HashMap<>(); // aggregate -> {sequence, micros, process, local}
      AtomicLong duplicates = new AtomicLong();
      Map<UUID, Boolean> seen = new java.util.concurrent.ConcurrentHashMap<>();
      java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(processes);
      for (int i = 0; i < processes; i++) {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
            .toString(), "-Xmx256m", "-cp", System.getProperty("java.class.path"), Worker.class.getName(),
            "--url", BenchSupport.postgresUrl(options), "--user", options.getOrDefault("user", "postgres"),
            "--password", options.getOrDefault("password", ""), "--table", table, "--ordered",
            String.valueOf(ordered)));
        Process child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        children.add(child);
        int process = i;
        Thread reader = new Thread(() -> read(child, process, ready, stats, publications, seen, duplicates));
        reader.start();
        readers.add(reader);
      }
      if (!ready.await(60, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the dispatcher processes did not get ready in 60 s");
      }
      long t0 = System.nanoTime();
      children.forEach(c -> send(c, "GO"));
      long deadline = t0 + TimeUnit.MINUTES.toNanos(10);
      while (seen.size() < events) { // counted here: polling the table would load the database under test
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("not drained in 10 minutes");
        }
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20));
      }
      double seconds = (System.nanoTime() - t0) / 1e9;
      children.forEach(c -> send(c, "STOP"));
      for (Thread r : readers) {
        r.join(60_000);
      }
      for (Process c : children) {
        c.waitFor(30, TimeUnit.SECONDS);
      }
      long marked = store.countByStatus().get(OutboxStatus.DISPATCHED);
      if (marked != events) {
        throw new IllegalStateException(marked + " of " + events + " events marked DISPATCHED after the stop");
      }
      long claims = 0;
      long empty = 0;
      long lost = 0;
      List<String> perProcess = new ArrayList<>();
      synchronized (stats) {
        for (String[] s : stats) {
          perProcess.add(String.format("%,.0f", Long.parseLong(s[1]) / seconds));
          claims += Long.parseLong(s[2]);
          empty += Long.parseLong(s[3]);
          lost += Long.parseLong(s[4]);
        }
      }
      long violations = ordered ? violations(publications) : 0;
      String row = String.format("| %s | %d | %,.0f | %s | %,d | %,d | %,d | %,d | %s |%n",
          ordered ? "ordered" : "throughput", processes, events / seconds, String.join(" / ", perProcess), claims,
          empty, lost, duplicates.get(), ordered ? String.valueOf(violations) : "n/a");
      rows.add(row);
      System.err.print(row);
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
    }
  }

  private void read(Process child, int process, java.util.concurrent.CountDownLatch ready, List<String[]> stats,
      Map<String, List<long[]>> publications, Map<UUID, Boolean> seen, AtomicLong duplicates) {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
      long local = 0;
      for (String line; (line = r.readLine()) != null; ) {
        if (line.equals("READY")) {
          ready.countDown();
        } else if (line.startsWith("E ")) {
          String[] p = line.split(" ");
          if (seen.putIfAbsent(UUID.fromString(p[1]), Boolean.TRUE) != null) {
            duplicates.incrementAndGet();
          }
          synchronized (publications) {
            publications.computeIfAbsent(p[2], k -> new ArrayList<>())
                .add(new long[] {Long.parseLong(p[3]), Long.parseLong(p[4]), process, local++});
          }
        } else if (line.startsWith("STATS ")) {
          synchronized (stats) {
            stats.add(line.split(" "));
          }
        }
      }
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Per aggregate, in publication order (wall clock, then each process's own order): sequences must rise. */
  private static long violations(Map<String, List<long[]>> publications) {
    long violations = 0;
    for (List<long[]> list : publications.values()) {
      list.sort((a, b) -> a[1] != b[1] ? Long.compare(a[1], b[1])
          : a[2] != b[2] ? Long.compare(a[2], b[2]) : Long.compare(a[3], b[3]));
      for (int i = 1; i < list.size(); i++) {
        if (list.get(i)[0] <= list.get(i - 1)[0]) {
          violations++;
        }
      }
    }
    return violations;
  }

  private static void send(Process child, String line) {
    try {
      child.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
      child.getOutputStream().flush();
    } catch (java.io.IOException e) {
      throw new IllegalStateException(e);
    }
  }

  private void load(JdbcOutboxStore store, String table) throws SQLException {
    int perAggregate = Math.max(1, events / aggregates);
    List<OutboxEvent> batch = new ArrayList<>();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      for (int i = 0; i < events; i++) {
        int aggregate = i / perAggregate;
        batch.add(OutboxEvent.builder().aggregate("order", "o-" + aggregate).topic("order.changed")
            .payload("{\"order\":" + aggregate + ",\"n\":" + i + "}").build());
        if (batch.size() == 1_000 || i == events - 1) {
          store.append(c, batch);
          c.commit();
          batch.clear();
        }
      }
      c.setAutoCommit(true);
      try (Statement s = c.createStatement()) {
        s.execute("VACUUM ANALYZE \"" + table + "\"");
      }
    }
  }


  /**
   * One dispatcher process: prints READY, starts at GO, prints {@code E <id> <aggregate> <sequence> <micros>}
   * per publication, and at STOP closes the dispatcher and prints
   * {@code STATS <dispatched> <claims> <empty claims> <leases lost>}.
   */
  public static final class Worker {
    public static void main(String[] args) throws Exception {
      Map<String, String> options = BenchSupport.parse(args);
      boolean ordered = Boolean.parseBoolean(options.get("ordered"));
      PrintStream out = new PrintStream(new java.io.BufferedOutputStream(
          new java.io.FileOutputStream(java.io.FileDescriptor.out), 1 << 16), false, StandardCharsets.UTF_8);
      AtomicLong claims = new AtomicLong();
      AtomicLong empty = new AtomicLong();
      AtomicLong lost = new AtomicLong();
      AtomicLong dispatched = new AtomicLong();
      try (HikariDataSource ds = BenchSupport.postgresPool(options, 4)) {
        warmUp(ds, options.get("table") + "_warm_" + ProcessHandle.current().pid(), ordered);
        JdbcOutboxStore jdbc = JdbcOutboxStore.builder().dataSource(ds).table(options.get("table")).build();
        OutboxStore counted = countingClaims(jdbc, claims, empty);
        AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder().store(counted).useClaim(true)
            .preserveAggregateOrder(ordered).batchSize(BATCH).pollInterval(Duration.ofMillis(50))
            .listener(new OutboxListener() {
              @Override
              public void onLeaseLost(OutboxEvent event) {
                lost.incrementAndGet();
              }

              @Override
              public void onBatch(io.mic.outbox.DispatchResult result, Duration elapsed) {
                synchronized (out) {
                  out.flush(); // the parent counts publications as they come
                }
              }
            })
            .dispatchFn(e -> {
              dispatched.incrementAndGet();
              String line = "E " + e.id() + " " + e.aggregateId() + " " + e.sequence() + " "
                  + WakeUpBenchmark.nowMicros();
              synchronized (out) {
                out.println(line);
              }
            }).build();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        synchronized (out) {
          out.println("READY");
          out.flush();
        }
        if (!"GO".equals(in.readLine())) {
          return;
        }
        dispatcher.start();
        in.readLine(); // STOP, or the end of the input
        dispatcher.close();
        synchronized (out) {
          out.println("STATS " + dispatched.get() + " " + claims.get() + " " + empty.get() + " " + lost.get());
          out.flush();
        }
      }
    }

    /**
     * Drains a small table of its own with the same settings before READY, so that each JVM's compiler has
     * warmed up the claim, publish and mark paths and a short timed drain does not measure JIT compilation.
     */
    private static void warmUp(HikariDataSource ds, String table, boolean ordered) throws SQLException {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).table(table).build();
      store.createSchema();
      try {
        for (int round = 0; round < 4; round++) {
          try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            for (int b = 0; b < 5; b++) {
              List<OutboxEvent> batch = new ArrayList<>();
              for (int i = 0; i < 1_000; i++) {
                batch.add(OutboxEvent.builder().aggregate("warm", "w-" + i % 100).topic("warm")
                    .payload("{\"n\":" + i + "}").build());
              }
              store.append(c, batch);
              c.commit();
            }
          }
          io.mic.outbox.OutboxDispatcher d = io.mic.outbox.OutboxDispatcher.builder().store(store).useClaim(true)
              .preserveAggregateOrder(ordered).batchSize(BATCH).dispatchFn(e -> { }).build();
          while (d.dispatchOnce().dispatched() > 0) {
            // drain
          }
        }
      } finally {
        BenchSupport.dropOutbox(ds, table);
      }
    }

    private static OutboxStore countingClaims(OutboxStore store, AtomicLong claims, AtomicLong empty) {
      return (OutboxStore) Proxy.newProxyInstance(OutboxStore.class.getClassLoader(),
          new Class<?>[] {OutboxStore.class}, (proxy, method, args) -> {
            Object result;
            try {
              result = method.invoke(store, args);
            } catch (InvocationTargetException e) {
              throw e.getCause();
            }
            if (method.getName().startsWith("claim")) {
              claims.incrementAndGet();
              if (((Collection<?>) result).isEmpty()) {
                empty.incrementAndGet();
              }
            }
            return result;
          });
    }
  }

  static {
    System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
  }
}
