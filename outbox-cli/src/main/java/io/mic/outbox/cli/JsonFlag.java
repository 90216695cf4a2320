package io.mic.outbox.cli;

import picocli.CommandLine.Option;

/** {@code --json} after the command name too ({@code mic-outbox … status --json}). */
final class JsonFlag {
  @Option(names = "--json", description = "machine-readable output: one JSON document on stdout")
  boolean json;
}
