package io.mic.outbox.cli;

import io.mic.outbox.jdbc.OutboxControl;
import io.mic.outbox.jdbc.OutboxStoreException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "pause", sortOptions = false,
    description = {"Pauses dispatching for every dispatcher process of the outbox, within one poll interval:",
        "every topic, or one with --topic. Committed events stay in the outbox; in ordered mode a paused event",
        "at the head of its aggregate holds the aggregate's later events. Lift it with resume."})
final class PauseCommand extends OutboxCommand {
  @Option(names = "--topic", paramLabel = "TOPIC", description = "pause this topic only (default: every topic)")
  private String topic;

  @Option(names = "--reason", paramLabel = "TEXT", required = true,
      description = "why, and who to ask; shown by status")
  private String reason;

  @Override
  public Integer call() {
    Database db = database();
    OutboxControl control = db.control();
    boolean paused;
    OutboxControl.Pause pause;
    try {
      control.createSchema(); // an outbox created before the control table gets it now
      paused = control.pause(topic, reason);
      pause = control.pauses().stream().filter(p -> java.util.Objects.equals(p.topic(), topic)).findFirst()
          .orElseThrow(() -> new CheckFailedException("the pause was lifted at once by someone else"));
    } catch (OutboxStoreException e) {
      throw db.failed("store the pause", e);
    }
    String what = topic == null ? "every topic" : "topic " + topic;
    print(j -> j.begin().field("paused", paused).field("topic", topic).field("reason", pause.reason())
        .field("pausedAt", pause.pausedAt()).end(), paused ? "paused " + what + " at " + pause.pausedAt() + ": "
        + Printable.of(pause.reason()) : what + " was paused already, since " + pause.pausedAt() + ": "
        + Printable.of(pause.reason()));
    return MicOutbox.OK;
  }
}
