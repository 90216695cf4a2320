package io.mic.replay;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;

/** Runs {@code mic-events-replay} in this JVM and keeps its exit code, stdout and stderr. */
record Cli(int exitCode, String stdout, String stderr) {

  static Cli run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    String[] all = Arrays.copyOf(args, args.length + 2);
    all[args.length] = "--progress-interval";
    all[args.length + 1] = "0";
    int code = ReplayCommand.execute(all, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Cli(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  List<String> lines() {
    return stdout.isEmpty() ? List.of() : List.of(stdout.split("\n"));
  }

  /** The {@code original_id} of each dry-run line, in order. */
  List<String> ids() {
    return lines().stream().map(l -> l.substring(l.indexOf("\"original_id\":\"") + 15, l.indexOf("\",\"topic\""))).toList();
  }
}
