package io.mic.outbox.cli;

import java.io.PrintWriter;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * A command of {@code mic-outbox}, at any depth: what it takes from the root command (the database, the
 * streams, {@code --json}) and the one way it prints a result.
 */
abstract class OutboxCommand implements Callable<Integer> {
  @Spec
  private CommandSpec spec;

  final MicOutbox root() {
    return (MicOutbox) spec.root().userObject();
  }

  final Database database() {
    return root().database();
  }

  final PrintWriter out() {
    return root().out;
  }

  final PrintWriter err() {
    return root().err;
  }

  final boolean json() {
    return root().json;
  }

  /** Prints {@code text}, or with {@code --json} the document {@code {"field":count}}. */
  final void print(String field, long count, String text) {
    print(j -> j.begin().field(field, count).end(), text);
  }

  /** Prints {@code text}, or with {@code --json} the document {@code document} writes. */
  final void print(Consumer<Json> document, String text) {
    if (json()) {
      try (Json j = new Json(out())) {
        document.accept(j);
      }
    } else {
      out().println(text);
    }
  }
}
