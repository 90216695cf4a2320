package io.mic.outbox.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Where the benchmark JVM's own CPU time went, by its threads' names: the threads that publish (a dispatcher's
 * workers, or the raw client's loop on {@code main}), a pipelined worker's read and mark threads, and every
 * other Java thread (the broker client's I/O threads, the pool's housekeeping); and, on Linux, the JVM's own
 * garbage collection and JIT compiler threads, by their names in {@code /proc/self/task}. What the process used
 * beyond these groups is its total from {@link CpuSplit} minus them.
 * Threads must live from one snapshot to the next: the benchmark takes its second one before it closes a
 * dispatcher.
 */
final class ThreadCpu {
  static final String PUBLISHING = "publishing threads";
  static final String READS = "reads";
  static final String MARKS = "marks";
  static final String OTHER = "other Java threads (broker client I/O)";
  static final String GC = "garbage collection";
  static final String JIT = "JIT compilation";
  static final String[] GROUPS = {PUBLISHING, READS, MARKS, OTHER, GC, JIT};

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final long NANOS_PER_SECOND = 1_000_000_000L;

  private ThreadCpu() {}

  static boolean available() {
    return THREADS.isThreadCpuTimeSupported();
  }

  /** CPU nanoseconds used so far by each group: its live Java threads, or the JVM's native threads of that kind. */
  static Map<String, Long> snapshot() {
    Map<String, Long> nanos = new LinkedHashMap<>();
    for (String group : GROUPS) {
      nanos.put(group, 0L);
    }
    if (!available()) {
      return nanos;
    }
    for (ThreadInfo info : THREADS.getThreadInfo(THREADS.getAllThreadIds())) {
      if (info == null) {
        continue; // ended meanwhile
      }
      long used = THREADS.getThreadCpuTime(info.getThreadId());
      if (used > 0) {
        nanos.merge(groupOf(info.getThreadName()), used, Long::sum);
      }
    }
    nativeThreads(nanos);
    return nanos;
  }

  /** Milliseconds of CPU per 1,000 events in each group between two snapshots. */
  static Map<String, Double> perThousand(Map<String, Long> before, Map<String, Long> after, int events) {
    return CpuSplit.perThousand(before, after, events, NANOS_PER_SECOND);
  }

  /** Adds the CPU of the JVM's garbage collection and JIT compiler threads, which are not Java threads. */
  private static void nativeThreads(Map<String, Long> nanos) {
    try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
      tasks.forEach(task -> {
        String name = CpuSplit.read(task.resolve("comm")).trim(); // "" when the thread ended meanwhile
        String group = name.startsWith("GC Thread") || name.startsWith("G1 ") ? GC
            : name.startsWith("C1 Compiler") || name.startsWith("C2 Compiler") ? JIT : null;
        if (group != null) {
          nanos.merge(group, CpuSplit.ticksOf(task) * NANOS_PER_SECOND / CpuSplit.TICKS_PER_SECOND, Long::sum);
        }
      });
    } catch (IOException e) {
      // not Linux: both groups stay 0
    }
  }

  private static String groupOf(String thread) {
    if (thread.matches(".*-dispatcher-\\d+-read-\\d+")) {
      return READS;
    }
    if (thread.matches(".*-dispatcher-\\d+-mark-\\d+")) {
      return MARKS;
    }
    if (thread.equals("main") || thread.matches(".*-dispatcher-\\d+")) {
      return PUBLISHING;
    }
    return OTHER;
  }
}
