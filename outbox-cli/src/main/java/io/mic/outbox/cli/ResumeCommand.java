package io.mic.outbox.cli;

import io.mic.outbox.jdbc.OutboxControl;
import io.mic.outbox.jdbc.OutboxStoreException;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "resume", sortOptions = false,
    description = {"Lifts a pause: the pause of every topic, or with --topic the pause of that topic.",
        "Dispatchers take the held events within one poll interval."})
final class ResumeCommand extends OutboxCommand {
  @Option(names = "--topic", paramLabel = "TOPIC", description = "lift this topic's pause (default: the pause of"
      + " every topic; pauses of single topics stay)")
  private String topic;

  @Override
  public Integer call() {
    Database db = database();
    OutboxControl control = db.control();
    boolean resumed;
    List<OutboxControl.Pause> left;
    try {
      resumed = control.resume(topic);
      left = control.pauses();
    } catch (OutboxStoreException e) {
      throw db.failed("lift the pause", e);
    }
    String what = topic == null ? "every topic" : "topic " + topic;
    if (json()) {
      try (Json j = new Json(out())) {
        j.begin().field("resumed", resumed).field("topic", topic).beginArray("stillPaused");
        left.forEach(p -> j.value(p.allTopics() ? "*" : p.topic()));
        j.endArray().end();
      }
    } else {
      out().println(resumed ? "resumed " + what : what + " was not paused");
      for (OutboxControl.Pause p : left) {
        out().println("still paused: " + (p.allTopics() ? "every topic" : "topic " + p.topic()) + " since "
            + p.pausedAt() + ": " + Printable.of(p.reason()));
      }
    }
    return MicOutbox.OK;
  }
}
