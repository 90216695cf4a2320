package io.mic.outbox.cli;

import io.mic.outbox.HeldAggregate;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.DeadLetterQuery;
import io.mic.outbox.jdbc.OutboxDeadLetters;
import io.mic.outbox.jdbc.OutboxStoreException;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "dlq", description = {"Dead letters: list, redrive (back to PENDING with fresh attempts) or purge;",
    "held lists the aggregates waiting behind a dead letter."},
    subcommands = {DlqCommand.ListDeadLetters.class, DlqCommand.Redrive.class, DlqCommand.Purge.class,
        DlqCommand.Held.class})
final class DlqCommand implements Callable<Integer> {
  @Spec
  private CommandSpec spec;

  @Override
  public Integer call() {
    throw new CommandLine.ParameterException(spec.commandLine(), "dlq needs a command: list, redrive, purge or held");
  }

  private static OutboxDeadLetters deadLetters(Database db) {
    return OutboxDeadLetters.builder().store(db.store()).build();
  }

  @Command(name = "list", sortOptions = false, description = "Lists dead letters, oldest first.")
  static final class ListDeadLetters extends OutboxCommand {
    @Mixin
    private DlqFilter filter;

    @Option(names = "--limit", paramLabel = "N", defaultValue = "" + DeadLetterQuery.DEFAULT_LIST_LIMIT,
        description = "at most N events (default: ${DEFAULT-VALUE})")
    private int limit;

    @Override
    public Integer call() {
      Database db = database();
      List<OutboxEvent> events;
      try {
        events = deadLetters(db).listDeadLetters(filter.query().limit(limit).build());
      } catch (OutboxStoreException e) {
        throw db.failed("list the dead letters", e);
      }
      if (json()) {
        try (Json j = new Json(out())) {
          j.begin().beginArray("deadLetters");
          for (OutboxEvent e : events) {
            j.begin().field("id", e.id().toString()).field("topic", e.topic()).field("aggregateType", e.aggregateType())
                .field("aggregateId", e.aggregateId()).field("attempts", e.attempts())
                .field("createdAt", e.createdAt()).field("lastError", e.lastError()).end();
          }
          j.endArray().end();
        }
      } else {
        for (OutboxEvent e : events) {
          out().println(e.id() + "  " + e.topic() + "  " + e.aggregateType() + "/" + Printable.of(e.aggregateId())
              + "  attempts " + e.attempts() + "  created " + e.createdAt() + "  "
              + (e.lastError() == null ? "" : StatusCommand.firstLine(e.lastError())));
        }
        err().println(events.size() + " dead letter(s)" + (events.size() == limit ? " (--limit reached)" : ""));
      }
      return MicOutbox.OK;
    }
  }

  @Command(name = "held", description = {"Lists the aggregates whose later events wait behind a dead letter, oldest",
      "first: held by dispatchers with holdAggregateOnDeadLetter(true) until it is redriven or purged."})
  static final class Held extends OutboxCommand {
    @Override
    public Integer call() {
      Database db = database();
      List<HeldAggregate> held;
      try {
        held = deadLetters(db).heldAggregates();
      } catch (OutboxStoreException e) {
        throw db.failed("list the held aggregates", e);
      }
      if (json()) {
        try (Json j = new Json(out())) {
          j.begin().beginArray("heldAggregates");
          for (HeldAggregate h : held) {
            j.begin().field("aggregateType", h.aggregateType()).field("aggregateId", h.aggregateId())
                .field("deadEventId", h.deadEventId().toString()).field("waiting", h.waiting()).end();
          }
          j.endArray().end();
        }
      } else {
        for (HeldAggregate h : held) {
          out().println(h.aggregateType() + "/" + h.aggregateId() + "  dead " + h.deadEventId() + "  waiting "
              + h.waiting());
        }
        err().println(held.size() + " held aggregate(s)" + (held.isEmpty() ? ""
            : ": mic-outbox dlq redrive --id UUID publishes the dead letter first, then the waiting events"));
      }
      return MicOutbox.OK;
    }
  }

  @Command(name = "redrive", sortOptions = false,
      description = {"Puts dead letters back to PENDING with their attempts reset: one (--id), those matching the",
          "filters, or every one (--all --yes)."})
  static final class Redrive extends OutboxCommand {
    @Option(names = "--id", paramLabel = "UUID", description = "the one dead letter to redrive")
    private UUID id;

    @Mixin
    private Selection selection;

    @Override
    public Integer call() {
      selection.check("redrive", id != null);
      Database db = database();
      long redriven;
      try {
        OutboxDeadLetters letters = deadLetters(db);
        if (id != null) {
          if (!letters.redrive(id)) {
            throw new CheckFailedException("no dead letter " + id + ": it does not exist or is not in the DLQ"
                + " (mic-outbox dlq list shows them)");
          }
          redriven = 1;
        } else {
          redriven = selection.all ? letters.redriveAll() : letters.redrive(selection.filter.query().build());
        }
      } catch (OutboxStoreException e) {
        throw db.failed("redrive dead letters", e);
      }
      print("redriven", redriven, "redriven: " + redriven + " dead letter(s), PENDING again with their attempts reset");
      return MicOutbox.OK;
    }
  }

  @Command(name = "purge", sortOptions = false,
      description = "Deletes dead letters for good: those matching the filters, or every one (--all --yes).")
  static final class Purge extends OutboxCommand {
    @Mixin
    private Selection selection;

    @Override
    public Integer call() {
      selection.check("purge", false);
      Database db = database();
      long purged;
      try {
        DeadLetterQuery which = selection.all ? DeadLetterQuery.all() : selection.filter.query().build();
        purged = deadLetters(db).purgeDeadLetters(which);
      } catch (OutboxStoreException e) {
        throw db.failed("purge dead letters", e);
      }
      print("purged", purged, "purged: " + purged + " dead letter(s)");
      return MicOutbox.OK;
    }
  }

  /**
   * Which dead letters a change applies to: exactly one of an id, the filters, or every one with a
   * confirmation ({@code --all --yes}); this mixin adds the filters and {@code --all --yes}.
   */
  static final class Selection {
    @Mixin
    DlqFilter filter;

    @Option(names = "--all", description = "every dead letter; needs --yes as well")
    boolean all;

    @Option(names = "--yes", description = "confirms --all")
    boolean yes;

    void check(String verb, boolean id) {
      int chosen = (id ? 1 : 0) + (filter.any() ? 1 : 0) + (all ? 1 : 0);
      String how = (verb.equals("redrive") ? "--id UUID, " : "") + "filters (--topic, --aggregate-type, …)";
      if (chosen == 0) {
        throw new UsageException("dlq " + verb + " needs " + (verb.equals("redrive") ? "--id UUID, " : "")
            + "filters (--topic, --aggregate-type, --aggregate-id, --created-from, --created-before,"
            + " --error-contains) or --all --yes");
      }
      if (chosen > 1) {
        throw new UsageException("dlq " + verb + ": give one of " + how + " or --all, not several");
      }
      if (all && !yes) {
        throw new UsageException("dlq " + verb + " --all applies to every dead letter: add --yes to confirm");
      }
      if (yes && !all) {
        throw new UsageException("--yes confirms --all only; filtered " + verb + "s need no confirmation");
      }
    }
  }
}
