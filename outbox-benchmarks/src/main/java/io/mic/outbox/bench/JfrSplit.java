package io.mic.outbox.bench;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

/**
 * Where a benchmark JVM spent its time, per scenario, from a Flight Recording: each CPU sample
 * ({@code jdk.ExecutionSample}) taken while a scenario's clock ran ({@link ScenarioEvent}) is given to the
 * first library found walking its stack down from the top frame (socket reads and writes count for the
 * driver or client that made them); time blocked on locks is summed from contended monitors and parks on
 * locks. Writes a Markdown table per scenario.
 *
 * <pre>
 * B=outbox-benchmarks/target/outbox-benchmarks.jar
 * java -XX:StartFlightRecording=settings=profile,filename=e2e.jfr -cp $B io.mic.outbox.bench.EndToEndBenchmark \
 *      --broker nats --scenarios "throughput mode, 2 workers, pipelined"
 * java -cp $B io.mic.outbox.bench.JfrSplit e2e.jfr [--out bench-results/jfr-split.md]
 * </pre>
 */
public final class JfrSplit {
  private static final String OTHER = "JDK and other (the benchmark's loop, JDK code called directly)";
  /** Package prefixes per group, in the order a stack's frames are matched against them. */
  private static final Map<String, List<String>> GROUPS = new LinkedHashMap<>();

  static {
    GROUPS.put("database client (pgjdbc, HikariCP)", List.of("org.postgresql.", "com.zaxxer.hikari."));
    GROUPS.put("broker client (NATS, RabbitMQ, Kafka)", List.of("io.nats.", "com.rabbitmq.", "org.apache.kafka."));
    GROUPS.put("JSON (Jackson)", List.of("com.fasterxml.jackson."));
    GROUPS.put("outbox (dispatcher, store, publisher)", List.of("io.mic.outbox."));
  }

  private JfrSplit() {}

  public static void main(String[] args) throws IOException {
    if (args.length < 1) {
      throw new IllegalArgumentException("usage: JfrSplit RECORDING.jfr [--out FILE]");
    }
    Map<String, String> options = BenchSupport.parse(Arrays.copyOfRange(args, 1, args.length));
    String report = report(Path.of(args[0]));
    System.out.println(report);
    if (options.containsKey("out")) {
      BenchSupport.write(Path.of(options.get("out")), report);
    }
  }

  /** One scenario's timed part. */
  private record Span(String scenario, Instant start, Instant end) {}

  /** What the samples of one scenario add up to. */
  private static final class Tally {
    final Map<String, Long> samples = new LinkedHashMap<>();
    final Map<String, Duration> blocked = new LinkedHashMap<>();
    final Map<String, Long> topFrames = new TreeMap<>();
    long total;

    Tally() {
      GROUPS.keySet().forEach(g -> {
        samples.put(g, 0L);
        blocked.put(g, Duration.ZERO);
      });
      samples.put(OTHER, 0L);
      blocked.put(OTHER, Duration.ZERO);
    }
  }

  static String report(Path recording) throws IOException {
    List<RecordedEvent> events = RecordingFile.readAllEvents(recording);
    List<Span> spans = new ArrayList<>();
    for (RecordedEvent e : events) {
      if (e.getEventType().getName().equals(ScenarioEvent.NAME)) {
        spans.add(new Span(e.getString("scenario"), e.getStartTime(), e.getEndTime()));
      }
    }
    Map<String, Tally> tallies = new LinkedHashMap<>();
    spans.stream().map(Span::scenario).filter(s -> !s.startsWith("warm-up")).distinct()
        .forEach(s -> tallies.put(s, new Tally()));
    for (RecordedEvent e : events) {
      String type = e.getEventType().getName();
      Tally t = tallyOf(spans, tallies, e.getStartTime());
      if (t == null) {
        continue;
      }
      if (type.equals("jdk.ExecutionSample")) {
        t.samples.merge(groupOf(e.getStackTrace()), 1L, Long::sum);
        t.topFrames.merge(topFrame(e.getStackTrace()), 1L, Long::sum);
        t.total++;
      } else if (type.equals("jdk.JavaMonitorEnter") || (type.equals("jdk.ThreadPark") && parkedOnLock(e))) {
        t.blocked.merge(groupOf(e.getStackTrace()), e.getDuration(), Duration::plus);
      }
    }
    StringBuilder md = new StringBuilder("# Where the JVM's time went, per scenario: ")
        .append(recording.getFileName()).append("\n\nCPU samples (jdk.ExecutionSample) taken while a scenario's clock"
            + " ran, each given to the first library on its stack from the top; blocked: contended monitors and"
            + " parks on locks of at least JFR's threshold (20 ms with settings=profile). Waits for an"
            + " acknowledgement or for work are not locking and are left out.\n");
    tallies.forEach((scenario, t) -> {
      md.append("\n## ").append(scenario).append("\n\n").append(t.total).append(" samples.\n\n")
          .append("| group | samples | share | blocked on locks (s) |\n|---|---:|---:|---:|\n");
      t.samples.forEach((group, n) -> md.append("| ").append(group).append(" | ").append(n).append(" | ")
          .append(String.format("%.0f %%", t.total == 0 ? 0 : 100.0 * n / t.total)).append(" | ")
          .append(String.format("%.2f", t.blocked.get(group).toMillis() / 1000.0)).append(" |\n"));
      md.append("\nTop frames: ");
      t.topFrames.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue(Comparator.reverseOrder()))
          .limit(8).forEach(f -> md.append(f.getKey()).append(" ").append(f.getValue()).append("; "));
      md.append("\n");
    });
    return md.toString();
  }

  private static Tally tallyOf(List<Span> spans, Map<String, Tally> tallies, Instant at) {
    for (Span s : spans) {
      if (!at.isBefore(s.start()) && at.isBefore(s.end())) {
        return tallies.get(s.scenario()); // null for the warm-up
      }
    }
    return null;
  }

  /** A park on a lock (a ReentrantLock or read-write lock), not a wait for work or for an acknowledgement. */
  private static boolean parkedOnLock(RecordedEvent e) {
    RecordedClass parked = e.getValue("parkedClass");
    return parked != null && parked.getName().matches(".*Reentrant(ReadWrite)?Lock.*");
  }

  private static String topFrame(RecordedStackTrace stack) {
    if (stack == null || stack.getFrames().isEmpty()) {
      return "(no stack)";
    }
    RecordedFrame f = stack.getFrames().get(0);
    return f.getMethod().getType().getName().replaceFirst("^.*\\.", "") + "." + f.getMethod().getName();
  }

  private static String groupOf(RecordedStackTrace stack) {
    if (stack == null) {
      return OTHER;
    }
    for (RecordedFrame frame : stack.getFrames()) {
      String type = frame.getMethod().getType().getName();
      for (Map.Entry<String, List<String>> group : GROUPS.entrySet()) {
        if (group.getValue().stream().anyMatch(type::startsWith)) {
          return group.getKey();
        }
      }
    }
    return OTHER;
  }
}
