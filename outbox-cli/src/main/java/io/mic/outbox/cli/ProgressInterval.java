package io.mic.outbox.cli;

import java.io.PrintWriter;
import java.time.Duration;
import picocli.CommandLine.Option;

/** {@code --progress-interval} of the commands that delete page by page (purge, archive). */
final class ProgressInterval {
  @Option(names = "--progress-interval", paramLabel = "DURATION", converter = Durations.class, defaultValue = "10s",
      description = "at most one progress line on stderr per interval, 0s for one per batch (default: ${DEFAULT-VALUE})")
  private Duration interval;

  /** Before the command touches the database. */
  void check() {
    if (interval.isNegative()) {
      throw new UsageException("--progress-interval must be >= 0, was " + Durations.format(interval));
    }
  }

  Progress start(PrintWriter err, String command) {
    return new Progress(err, command, interval);
  }
}
