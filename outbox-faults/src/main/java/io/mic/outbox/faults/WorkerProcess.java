package io.mic.outbox.faults;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@link WorkerMain} running in its own JVM, on the test's class path. Its stdout and stderr are kept in
 * {@code <logDir>/<name>.out} and {@code .err}; the stdout lines are also watched for {@code READY},
 * {@code AT <point>} and the other reports.
 */
public final class WorkerProcess implements AutoCloseable {
  private final String name;
  private final Process process;
  private final List<String> lines = new ArrayList<>();
  private final Path out;
  private final Path err;

  private WorkerProcess(String name, Process process, Path out, Path err) {
    this.name = name;
    this.process = process;
    this.out = out;
    this.err = err;
  }

  public static WorkerProcess start(String name, Path logDir, List<String> args) throws IOException {
    Files.createDirectories(logDir);
    List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx128m", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=info", "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-Dorg.slf4j.simpleLogger.log.org.apache.kafka=warn",
        "-cp", System.getProperty("java.class.path"), WorkerMain.class.getName()));
    command.addAll(args);
    Path out = logDir.resolve(name + ".out");
    Path err = logDir.resolve(name + ".err");
    Process p = new ProcessBuilder(command).redirectError(err.toFile()).start();
    WorkerProcess w = new WorkerProcess(name, p, out, err);
    Thread reader = new Thread(w::pump, "worker-stdout-" + name);
    reader.setDaemon(true);
    reader.start();
    return w;
  }

  private void pump() {
    try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        Writer w = Files.newBufferedWriter(out, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
            StandardOpenOption.APPEND)) {
      String line;
      while ((line = r.readLine()) != null) {
        w.write(line + "\n");
        w.flush();
        synchronized (lines) {
          lines.add(line);
          lines.notifyAll();
        }
      }
    } catch (IOException e) {
      // the process died
    }
  }

  public String name() {
    return name;
  }

  public long pid() {
    return process.pid();
  }

  /** Waits for a stdout line starting with {@code prefix}; fails with the worker's stderr tail if none comes. */
  public String awaitLine(String prefix, Duration timeout) throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (lines) {
      while (true) {
        for (String l : lines) {
          if (l.startsWith(prefix)) {
            return l;
          }
        }
        long left = deadline - System.nanoTime();
        if (left <= 0 || (!process.isAlive() && lines.stream().noneMatch(l -> l.startsWith(prefix)))) {
          throw new AssertionError("worker " + name + " did not print '" + prefix + "' within " + timeout
              + (process.isAlive() ? "" : " (it exited " + process.exitValue() + ")") + "; stderr:\n" + tail(err));
        }
        TimeUnit.NANOSECONDS.timedWait(lines, Math.min(left, TimeUnit.MILLISECONDS.toNanos(200)));
      }
    }
  }

  /** How many stdout lines so far start with {@code prefix}. */
  public long count(String prefix) {
    synchronized (lines) {
      return lines.stream().filter(l -> l.startsWith(prefix)).count();
    }
  }

  public void awaitReady() throws InterruptedException {
    awaitLine("READY", Duration.ofSeconds(60));
  }

  /** The stdout lines starting with {@code prefix} so far. */
  public List<String> lines(String prefix) {
    synchronized (lines) {
      return lines.stream().filter(l -> l.startsWith(prefix)).toList();
    }
  }

  /** SIGKILL: no shutdown hook, no finally block, open transactions die with their connections. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      throw new AssertionError("worker " + name + " survived SIGKILL for 20 s");
    }
  }

  public void pause() {
    Shell.signal(pid(), "STOP");
  }

  public void resume() {
    Shell.signal(pid(), "CONT");
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  /** Asks the worker to stop (closes its stdin), then kills it if it did not within 20 s. */
  @Override
  public void close() throws InterruptedException {
    if (!process.isAlive()) {
      return;
    }
    try {
      process.getOutputStream().close();
    } catch (IOException e) {
      // it is going away anyway
    }
    if (!process.waitFor(20, TimeUnit.SECONDS)) {
      kill();
    }
  }

  public List<Path> logs() {
    return List.of(out, err);
  }

  private static String tail(Path file) {
    try {
      List<String> all = Files.readAllLines(file);
      return String.join("\n", all.subList(Math.max(0, all.size() - 30), all.size()));
    } catch (IOException e) {
      return "(no stderr: " + e.getMessage() + ")";
    }
  }
}
