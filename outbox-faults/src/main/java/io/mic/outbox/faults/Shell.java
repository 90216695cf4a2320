package io.mic.outbox.faults;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs the few operating-system commands the suite needs, with their output in the error when they fail. */
final class Shell {
  private Shell() {}

  /** Runs {@code command}; fails with its exit code and output unless it exits 0 within the timeout. */
  static String run(long timeoutSeconds, String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      p.getOutputStream().close();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + " did not finish in " + timeoutSeconds + " s");
      }
      String text = new String(out, StandardCharsets.UTF_8);
      if (p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " exited " + p.exitValue() + ": " + text);
      }
      return text;
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + String.join(" ", command) + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while running " + command[0], e);
    }
  }

  /** The command run as {@code user} when this process is root (tests run as root; PostgreSQL refuses to). */
  static String[] as(String user, String... command) {
    if (!"root".equals(System.getProperty("user.name"))) {
      return command;
    }
    List<String> all = new ArrayList<>(List.of("runuser", "-u", user, "--"));
    all.addAll(List.of(command));
    return all.toArray(String[]::new);
  }

  static int freePort() {
    try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException("no free port: " + e.getMessage(), e);
    }
  }

  static void signal(long pid, String signal) {
    run(10, "kill", "-" + signal, Long.toString(pid));
  }
}
