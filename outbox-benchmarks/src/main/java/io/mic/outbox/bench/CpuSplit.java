package io.mic.outbox.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Where the CPU time of a scenario went, on Linux: this JVM, the database server, the broker and everything
 * else, read from {@code /proc} before and after. Elsewhere every figure is 0 and the report says so.
 */
final class CpuSplit {
  static final String JVM = "benchmark JVM";
  static final String DATABASE = "PostgreSQL";
  static final String BROKER = "broker";
  static final String OTHER = "other processes";

  static final long TICKS_PER_SECOND = 100; // USER_HZ on every Linux this runs on
  private static final Path PROC = Path.of("/proc");

  private CpuSplit() {}

  static boolean available() {
    return Files.isReadable(PROC.resolve("self/stat"));
  }

  /** CPU ticks used so far per group. */
  static Map<String, Long> snapshot() {
    Map<String, Long> ticks = new LinkedHashMap<>();
    for (String group : new String[] {JVM, DATABASE, BROKER, OTHER}) {
      ticks.put(group, 0L);
    }
    if (!available()) {
      return ticks;
    }
    for (long pid : processes()) {
      long used = ticksOf(PROC.resolve(Long.toString(pid)));
      if (used > 0) {
        ticks.merge(groupOf(pid), used, Long::sum);
      }
    }
    return ticks;
  }

  /** Milliseconds of CPU per 1,000 events in each group between two snapshots. */
  static Map<String, Double> perThousand(Map<String, Long> before, Map<String, Long> after, int events) {
    return perThousand(before, after, events, TICKS_PER_SECOND);
  }

  /** Milliseconds of CPU per 1,000 events in each group between two snapshots counted in {@code unitsPerSecond}. */
  static Map<String, Double> perThousand(Map<String, Long> before, Map<String, Long> after, int events,
      long unitsPerSecond) {
    Map<String, Double> ms = new LinkedHashMap<>();
    after.forEach((group, t) -> ms.put(group,
        (t - before.getOrDefault(group, 0L)) * 1000.0 / unitsPerSecond / events * 1000));
    return ms;
  }

  /**
   * Read system calls made so far by the broker's processes ({@code syscr} in {@code /proc/PID/io}, readable as
   * root; 0 elsewhere): how many pieces the messages arrived in, since each read takes what the socket holds.
   */
  static long brokerReads() {
    long reads = 0;
    for (long pid : processes()) {
      if (groupOf(pid).equals(BROKER)) {
        for (String line : read(PROC.resolve(pid + "/io")).split("\n")) {
          if (line.startsWith("syscr:")) {
            reads += Long.parseLong(line.substring("syscr:".length()).trim());
          }
        }
      }
    }
    return reads;
  }

  /**
   * Waits until the machine is quiet, at most {@code max}: under {@code busyShare} of all cores busy over a
   * window of {@code window}, read from {@code /proc/stat}. Work left by what ran before (a stream's purge, a
   * dropped table, an appended backlog) then stays out of the next scenario's clock and CPU. Returns how long
   * it waited; at once where {@code /proc/stat} cannot be read.
   */
  static Duration awaitQuiet(Duration max, Duration window, double busyShare) throws InterruptedException {
    long start = System.nanoTime();
    long[] before = machineTicks();
    while (before != null && System.nanoTime() - start < max.toNanos()) {
      Thread.sleep(window.toMillis());
      long[] now = machineTicks();
      long busy = now[0] - before[0];
      long all = busy + now[1] - before[1];
      if (all > 0 && busy < busyShare * all) {
        break;
      }
      before = now;
    }
    return Duration.ofNanos(System.nanoTime() - start);
  }

  /** The machine's CPU ticks so far, busy and idle (idle and iowait), from {@code /proc/stat}; null elsewhere. */
  private static long[] machineTicks() {
    String first = read(PROC.resolve("stat")).lines().findFirst().orElse("");
    if (!first.startsWith("cpu ")) {
      return null;
    }
    String[] f = first.substring(4).trim().split("\\s+");
    long idle = Long.parseLong(f[3]) + Long.parseLong(f[4]);
    long busy = 0;
    for (int i = 0; i < Math.min(f.length, 8); i++) {
      busy += i == 3 || i == 4 ? 0 : Long.parseLong(f[i]);
    }
    return new long[] {busy, idle};
  }

  /** The process ids running now, from {@code /proc}. */
  static List<Long> processes() {
    try (Stream<Path> entries = Files.list(PROC)) {
      return entries.map(p -> p.getFileName().toString()).filter(n -> n.chars().allMatch(Character::isDigit))
          .map(Long::valueOf).toList();
    } catch (IOException e) {
      return List.of();
    }
  }

  /** The group of a process: this JVM, the database server, the broker, or other. */
  static String groupOf(long pid) {
    if (pid == ProcessHandle.current().pid()) {
      return JVM;
    }
    Path process = PROC.resolve(Long.toString(pid));
    String comm = read(process.resolve("comm")).trim();
    if (comm.equals("postgres")) {
      return DATABASE;
    }
    if (comm.equals("nats-server") || comm.equals("beam.smp") || comm.equals("epmd")
        || (comm.equals("java") && read(process.resolve("cmdline")).contains("kafka.Kafka"))) {
      return BROKER;
    }
    return OTHER;
  }

  /** The CPU one process has used so far, in ms. */
  static long cpuMillis(long pid) {
    return ticksOf(PROC.resolve(Long.toString(pid))) * 1000 / TICKS_PER_SECOND;
  }

  /**
   * utime + stime of a process, or of one thread given as {@code /proc/self/task/<tid>} (fields 14 and 15 of
   * its stat line, after the command in parentheses); 0 when it ended.
   */
  static long ticksOf(Path process) {
    String stat = read(process.resolve("stat"));
    int end = stat.lastIndexOf(')');
    if (end < 0) {
      return 0;
    }
    String[] fields = stat.substring(end + 2).split(" ");
    return fields.length > 12 ? Long.parseLong(fields[11]) + Long.parseLong(fields[12]) : 0;
  }

  /** The file's text, or "" when its process (or thread) ended while we looked. */
  static String read(Path file) {
    try {
      return Files.readString(file);
    } catch (IOException | RuntimeException e) {
      return ""; // the process ended while we looked
    }
  }
}
