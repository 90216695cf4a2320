package io.mic.outbox.cli;

import io.mic.outbox.test.OutboxTestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.stream.Stream;

/** One in-process run of the command: exit code, stdout, stderr. */
record Run(int exitCode, String stdout, String stderr) {
  static Run of(Map<String, String> env, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = MicOutbox.execute(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8), env);
    return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  /**
   * A run on {@code table} in the test database {@code db}, as an operator would start it: {@code --jdbc-url},
   * {@code --user} and {@code --table} before {@code args}, the password in the environment.
   */
  static Run on(OutboxTestDatabase db, String table, String... args) {
    String[] all = Stream.concat(Stream.of("--jdbc-url", db.url(), "--user", db.user(), "--table", table),
        Arrays.stream(args)).toArray(String[]::new);
    return of(Map.of(MicOutbox.PASSWORD_ENV, db.password()), all);
  }
}
