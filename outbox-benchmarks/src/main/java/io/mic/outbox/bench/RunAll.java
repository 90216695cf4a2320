package io.mic.outbox.bench;

import io.mic.outbox.bench.micro.HeadersJsonBenchmark;
import io.mic.outbox.bench.micro.OutboxEventBenchmark;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs every benchmark, one after the other, and writes one report, {@code bench-results/all.md}: a summary
 * table, then each benchmark's own report (each also stays in its own file beside it). The micro-benchmarks
 * (JMH) run first; each other benchmark runs in a JVM of its own, and is skipped, and said so, when its
 * server does not answer. Kept short by default for a shared 2-core machine: one round each, JMH 2 × 1 s
 * warm-up and 3 × 1 s measurement in one fork.
 *
 * <pre>
 * mvn -B -q -DskipTests package -pl outbox-benchmarks -am
 * java -cp outbox-benchmarks/target/outbox-benchmarks.jar io.mic.outbox.bench.RunAll \
 *      [--only micro,postgres,in-flight-read,wake-up,scale-out,mariadb,nats-publish,nats-end-to-end,rabbitmq,kafka,replay]
 *      [--rounds 1] [--postgres jdbc:postgresql://127.0.0.1:5432/test] [--mariadb jdbc:mariadb://127.0.0.1:3306/test]
 *      [--nats nats://127.0.0.1:4222] [--rabbitmq amqp://guest:guest@127.0.0.1:5672] [--kafka 127.0.0.1:9092]
 *      [--jmh-warmups 2] [--jmh-iterations 3] [--timeout-minutes 30] [--dir bench-results]
 * </pre>
 */
public final class RunAll {
  private static final List<String> ALL = List.of("micro", "postgres", "in-flight-read", "wake-up", "scale-out",
      "mariadb", "sustained", "nats-publish", "nats-end-to-end", "rabbitmq", "rabbitmq-end-to-end", "kafka",
      "kafka-end-to-end", "replay");

  private final Map<String, String> options;
  private final Path dir;
  private final List<String[]> summary = new ArrayList<>();
  private final StringBuilder reports = new StringBuilder();

  private RunAll(Map<String, String> options) {
    this.options = options;
    this.dir = Path.of(options.getOrDefault("dir", "bench-results"));
  }

  public static void main(String[] args) throws Exception {
    new RunAll(BenchSupport.parse(args)).run();
  }

  private void run() throws Exception {
    Files.createDirectories(dir);
    List<String> only = options.containsKey("only") ? List.of(options.get("only").split(",")) : ALL;
    String rounds = options.getOrDefault("rounds", "1");
    String pg = options.getOrDefault("postgres", "jdbc:postgresql://127.0.0.1:5432/test");
    String maria = options.getOrDefault("mariadb", "jdbc:mariadb://127.0.0.1:3306/test");
    String nats = options.getOrDefault("nats", "nats://127.0.0.1:4222");
    String rabbit = options.getOrDefault("rabbitmq", "amqp://guest:guest@127.0.0.1:5672");
    String kafka = options.getOrDefault("kafka", "127.0.0.1:9092");
    String loadBefore = BenchSupport.loadAverage();
    Instant started = Instant.now();
    for (String name : only) {
      if (!ALL.contains(name)) {
        throw new IllegalArgumentException("--only: unknown benchmark " + name + "; known: " + ALL);
      }
      System.err.println("=== " + name + " (load average " + BenchSupport.loadAverage() + ")");
      switch (name) {
        case "micro" -> micro();
        case "postgres" -> child(name, pg, PostgresBenchmark.class, "--url", pg, "--rounds", rounds);
        case "in-flight-read" -> child(name, pg, InFlightReadBenchmark.class, "--url", pg, "--rounds", rounds);
        case "wake-up" -> child(name, pg, WakeUpBenchmark.class, "--url", pg, "--rounds", rounds);
        case "sustained" -> child(name, pg, SustainedBenchmark.class, "--url", pg, "--minutes",
            options.getOrDefault("sustained-minutes", "10"));
        case "scale-out" -> child(name, pg, ScaleOutBenchmark.class, "--url", pg);
        case "mariadb" -> child(name, maria, MariaDbBenchmark.class, "--url", maria, "--rounds", rounds);
        case "nats-publish" -> child(name, nats, NatsPublishBenchmark.class, "--nats", nats);
        case "nats-end-to-end" -> child(name, nats + " " + pg, NatsEndToEndBenchmark.class, "--nats", nats, "--url",
            pg, "--rounds", rounds);
        case "rabbitmq" -> child(name, rabbit, RabbitMqBenchmark.class, "--uri", rabbit, "--rounds", rounds);
        case "rabbitmq-end-to-end" -> child(name, rabbit + " " + pg, EndToEndBenchmark.class, "--broker", "rabbitmq",
            "--rabbitmq", rabbit, "--url", pg, "--rounds", rounds);
        case "kafka-end-to-end" -> child(name, "kafka://" + kafka + " " + pg, EndToEndBenchmark.class, "--broker",
            "kafka", "--kafka", kafka, "--url", pg, "--rounds", rounds);
        case "kafka" -> child(name, "kafka://" + kafka, KafkaBenchmark.class, "--bootstrap", kafka, "--rounds", rounds);
        case "replay" -> child(name, nats, ReplayBenchmark.class, "--nats", nats);
        default -> throw new IllegalStateException(name);
      }
    }
    StringBuilder md = new StringBuilder("# All benchmarks\n\n");
    md.append("Run ").append(started.truncatedTo(ChronoUnit.SECONDS)).append(" to ")
        .append(Instant.now().truncatedTo(ChronoUnit.SECONDS)).append(", ")
        .append(Runtime.getRuntime().availableProcessors()).append(" cores, Java ")
        .append(System.getProperty("java.version")).append("; load average (1, 5, 15 min) ").append(loadBefore)
        .append(" at the start, ").append(BenchSupport.loadAverage()).append(" at the end. ").append(rounds)
        .append(" round(s) per benchmark.\n\n| benchmark | status | minutes | report |\n|---|---|---:|---|\n");
    summary.forEach(r -> md.append("| ").append(String.join(" | ", r)).append(" |\n"));
    md.append(reports);
    BenchSupport.write(dir.resolve("all.md"), md.toString());
  }

  // ------------------------------------------------------------------ JMH

  private void micro() throws Exception {
    long t0 = System.nanoTime();
    Collection<RunResult> results = new Runner(new OptionsBuilder()
        .include(Pattern.quote(OutboxEventBenchmark.class.getName()) + ".*")
        .include(Pattern.quote(HeadersJsonBenchmark.class.getName()) + ".*")
        .warmupIterations(Integer.parseInt(options.getOrDefault("jmh-warmups", "2")))
        .warmupTime(TimeValue.seconds(1))
        .measurementIterations(Integer.parseInt(options.getOrDefault("jmh-iterations", "3")))
        .measurementTime(TimeValue.seconds(1))
        .forks(1)
        .jvmArgsAppend("-Xmx256m")
        .build()).run();
    StringBuilder md = new StringBuilder("# Micro-benchmarks (JMH)\n\n");
    md.append("Run ").append(Instant.now().truncatedTo(ChronoUnit.SECONDS)).append(", load average ")
        .append(BenchSupport.loadAverage()).append(" at the end; average time per call, one thread, 1 fork, ")
        .append(options.getOrDefault("jmh-warmups", "2")).append(" x 1 s warm-up, ")
        .append(options.getOrDefault("jmh-iterations", "3"))
        .append(" x 1 s measurement (short: the error bars say how far to trust it).\n\n")
        .append("| benchmark | ns/op | ± (99.9 %) |\n|---|---:|---:|\n");
    results.stream().sorted((a, b) -> a.getParams().getBenchmark().compareTo(b.getParams().getBenchmark()))
        .forEach(r -> md.append(String.format("| %s | %,.0f | %,.0f |%n",
            r.getParams().getBenchmark().replace("io.mic.outbox.bench.micro.", ""),
            r.getPrimaryResult().getScore(), r.getPrimaryResult().getScoreError())));
    Path out = dir.resolve("micro.md");
    BenchSupport.write(out, md.toString());
    done("micro", "ok", t0, out);
  }

  // ------------------------------------------------------------------ the others, one JVM each

  private void child(String name, String servers, Class<?> main, String... args) throws Exception {
    long t0 = System.nanoTime();
    String unreachable = unreachable(servers);
    if (unreachable != null) {
      System.err.println("  skipped: " + unreachable + " does not answer");
      summary.add(new String[] {name, "skipped: " + unreachable + " does not answer", "-", "-"});
      return;
    }
    Path out = dir.resolve(name + ".md");
    Files.deleteIfExists(out);
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx512m", "-cp", System.getProperty("java.class.path"), main.getName()));
    command.addAll(List.of(args));
    command.addAll(List.of("--out", out.toString()));
    Process p = new ProcessBuilder(command).redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    boolean finished = p.waitFor(Long.parseLong(options.getOrDefault("timeout-minutes", "30")), TimeUnit.MINUTES);
    if (!finished) {
      p.destroyForcibly();
    }
    String status = !finished ? "timed out" : p.exitValue() == 0 && Files.exists(out) ? "ok"
        : "failed (exit " + p.exitValue() + "; see the output above)";
    done(name, status, t0, Files.exists(out) ? out : null);
  }

  private void done(String name, String status, long t0, Path report) throws IOException {
    summary.add(new String[] {name, status, String.format("%.1f", (System.nanoTime() - t0) / 60e9),
        report == null ? "-" : report.getFileName().toString()});
    if (report != null) {
      reports.append("\n---\n\n").append(Files.readString(report).replaceAll("(?m)^# ", "## "));
    }
  }

  /** The first {@code host:port} of these URLs that does not accept a connection within 2 s, or null. */
  private static String unreachable(String urls) {
    for (String url : urls.split(" ")) {
      String hostPort = hostPort(url);
      String[] hp = hostPort.split(":");
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(hp[0], Integer.parseInt(hp[1])), 2_000);
      } catch (IOException | RuntimeException e) {
        return hostPort;
      }
    }
    return null;
  }

  private static final Pattern HOST_PORT = Pattern.compile("//(?:[^@/]*@)?([^/:?]+):(\\d+)");

  static String hostPort(String url) {
    Matcher m = HOST_PORT.matcher(url);
    if (!m.find()) {
      throw new IllegalArgumentException("cannot find host:port in " + url);
    }
    return m.group(1) + ":" + m.group(2);
  }
}
