package io.mic.outbox.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Gives the database server CPUs of its own for a run, as a database server has in production, and puts
 * the broker and this JVM on the others; afterwards every process gets back the CPUs it had, also when the
 * run fails or is interrupted (a shutdown hook; only {@code kill -9} leaves them pinned). Linux only, through
 * {@code taskset}, as root (or with {@code CAP_SYS_NICE}).
 *
 * <p>On a machine whose few cores the database, the broker and the JVM share, the outbox is bound by CPU:
 * the raw client spends every cycle on publishing, the outbox also pays the database for its claims and
 * marks. With the database pinned apart, the raw client and the outbox have the same CPUs for the broker and
 * the client, and the ratio measures what the outbox costs the publishing side.
 */
final class CpuPinning implements AutoCloseable {
  private final String databaseCpus;
  private final String otherCpus;
  /** Each pinned process's CPUs before, in {@code taskset}'s list form. */
  private final Map<Long, String> before = new LinkedHashMap<>();
  /** What a database process started during the run gets back: the first database process's CPUs before. */
  private String databaseBefore;
  private final Thread onExit = new Thread(this::restore, "bench-cpu-restore");

  private CpuPinning(String databaseCpus, String otherCpus) {
    this.databaseCpus = databaseCpus;
    this.otherCpus = otherCpus;
  }

  /**
   * Pins the database server's processes to {@code databaseCpus} (a {@code taskset} list such as {@code 0} or
   * {@code 0-1}) and the broker's and this JVM's to every other CPU.
   *
   * @throws IllegalArgumentException the list is malformed, names a CPU this machine lacks, or leaves none
   *     for the broker
   * @throws IllegalStateException a process could not be pinned (the pinned ones are put back first)
   */
  static CpuPinning pin(String databaseCpus) {
    int cpus = Runtime.getRuntime().availableProcessors();
    BitSet database = parse(databaseCpus, cpus);
    BitSet others = new BitSet();
    others.set(0, cpus);
    others.andNot(database);
    if (others.isEmpty()) {
      throw new IllegalArgumentException("--database-cpus " + databaseCpus + " leaves none of the " + cpus
          + " CPUs to the broker and the benchmark; name fewer, e.g. --database-cpus 0");
    }
    CpuPinning pinning = new CpuPinning(list(database), list(others));
    Runtime.getRuntime().addShutdownHook(pinning.onExit);
    try {
      for (long pid : CpuSplit.processes()) {
        String group = CpuSplit.groupOf(pid);
        if (group.equals(CpuSplit.DATABASE)) {
          String was = pinning.move(pid, pinning.databaseCpus);
          if (pinning.databaseBefore == null) {
            pinning.databaseBefore = was;
          }
        } else if (group.equals(CpuSplit.BROKER) || group.equals(CpuSplit.JVM)) {
          pinning.move(pid, pinning.otherCpus);
        }
      }
    } catch (RuntimeException e) {
      pinning.close();
      throw e;
    }
    if (pinning.databaseBefore == null) {
      pinning.close();
      throw new IllegalStateException("--database-cpus: no PostgreSQL process runs on this machine; the option"
          + " pins a local server only");
    }
    return pinning;
  }

  /** What the report says of the run's CPUs. */
  String describe() {
    return "PostgreSQL pinned to CPU " + databaseCpus + ", the broker and this JVM to CPU " + otherCpus;
  }

  @Override
  public void close() {
    restore();
    try {
      Runtime.getRuntime().removeShutdownHook(onExit);
    } catch (IllegalStateException e) {
      // the JVM is exiting and the hook runs anyway
    }
  }

  private synchronized void restore() {
    before.forEach((pid, cpus) -> trySet(pid, cpus));
    if (databaseBefore != null) { // backends forked while pinned inherited the pinned CPUs
      for (long pid : CpuSplit.processes()) {
        if (!before.containsKey(pid) && CpuSplit.groupOf(pid).equals(CpuSplit.DATABASE)) {
          trySet(pid, databaseBefore);
        }
      }
    }
    before.clear();
  }

  /** @return the process's CPUs before, or null when it has ended meanwhile */
  private String move(long pid, String cpus) {
    String was = allowed(pid);
    if (was == null) {
      return null;
    }
    before.put(pid, was);
    String failure = set(pid, cpus);
    if (failure != null && allowed(pid) != null) {
      throw new IllegalStateException("taskset could not pin process " + pid + " to CPU " + cpus
          + " (root or CAP_SYS_NICE is needed): " + failure);
    }
    return was;
  }

  private static void trySet(long pid, String cpus) {
    String failure = set(pid, cpus);
    if (failure != null && allowed(pid) != null) {
      System.err.println("could not give process " + pid + " its CPUs " + cpus + " back: " + failure);
    }
  }

  /** @return null when done, else what went wrong */
  private static String set(long pid, String cpus) {
    try {
      Process p = new ProcessBuilder("taskset", "-a", "-c", "-p", cpus, Long.toString(pid))
          .redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
      if (!p.waitFor(10, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        return "taskset did not finish in 10 s";
      }
      return p.exitValue() == 0 ? null : out;
    } catch (IOException e) {
      return "taskset could not run (" + e.getMessage() + ")";
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  /** The process's allowed CPUs ({@code Cpus_allowed_list}), or null when it has ended. */
  private static String allowed(long pid) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith("Cpus_allowed_list:")) {
          return line.substring(line.indexOf(':') + 1).trim();
        }
      }
      return null;
    } catch (IOException e) {
      return null;
    }
  }

  private static BitSet parse(String cpus, int available) {
    BitSet set = new BitSet();
    for (String part : cpus.split(",", -1)) {
      String[] range = part.trim().split("-", -1);
      int from = cpu(range[0], cpus, available);
      int to = range.length == 2 ? cpu(range[1], cpus, available) : from;
      if (range.length > 2 || to < from) {
        throw notCpus(cpus, available);
      }
      set.set(from, to + 1);
    }
    return set;
  }

  private static int cpu(String text, String cpus, int available) {
    try {
      int cpu = Integer.parseInt(text.trim());
      if (cpu >= 0 && cpu < available) {
        return cpu;
      }
    } catch (NumberFormatException e) {
      // named below
    }
    throw notCpus(cpus, available);
  }

  private static IllegalArgumentException notCpus(String cpus, int available) {
    return new IllegalArgumentException("--database-cpus " + cpus + " is not a list of this machine's CPUs 0-"
        + (available - 1) + ", such as 0 or 0,1");
  }

  private static String list(BitSet cpus) {
    StringBuilder s = new StringBuilder();
    cpus.stream().forEach(c -> s.append(s.length() == 0 ? "" : ",").append(c));
    return s.toString();
  }
}
