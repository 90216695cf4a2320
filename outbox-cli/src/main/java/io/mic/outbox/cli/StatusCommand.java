package io.mic.outbox.cli;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxControl;
import io.mic.outbox.jdbc.OutboxStoreException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "status", sortOptions = false,
    description = {"Counts per status, the lag (age of the oldest PENDING or PROCESSING event) and that event,",
        "the dead letters, the cluster-wide pauses and the oldest open transaction of the database (it holds",
        "back the cleanup of dead rows). With --max-lag, --max-dlq or --max-transaction-age it is a check:",
        "exit 1 when a limit is exceeded."})
final class StatusCommand extends OutboxCommand {
  @Option(names = "--max-lag", paramLabel = "DURATION", converter = Durations.class,
      description = "exit 1 when the lag is longer, e.g. 5m")
  private Duration maxLag;

  @Option(names = "--max-dlq", paramLabel = "N", description = "exit 1 when there are more dead letters")
  private Long maxDlq;

  @Option(names = "--max-transaction-age", paramLabel = "DURATION", converter = Durations.class,
      description = "exit 1 when a transaction of the database has been open longer, e.g. 10m")
  private Duration maxTransactionAge;

  @Override
  public Integer call() {
    Database db = database();
    JdbcOutboxStore store = db.store();
    Map<OutboxStatus, Long> counts;
    Optional<Duration> lag;
    Optional<Duration> oldestTransaction;
    Optional<OutboxEvent> oldest;
    List<OutboxControl.Pause> pauses;
    try {
      counts = store.countByStatus();
      lag = store.oldestPendingAge();
      oldestTransaction = store.oldestTransactionAge();
      oldest = db.maintenance().oldestLiveEvent();
      pauses = db.control().pauses();
    } catch (OutboxStoreException e) {
      throw db.failed("read the status", e);
    }
    List<String> failed = new ArrayList<>();
    if (maxLag != null && lag.isPresent() && lag.get().compareTo(maxLag) > 0) {
      failed.add("lag " + Durations.format(lag.get()) + " is over --max-lag " + Durations.format(maxLag));
    }
    long dlq = counts.get(OutboxStatus.DLQ);
    if (maxDlq != null && dlq > maxDlq) {
      failed.add(dlq + " dead letter(s), over --max-dlq " + maxDlq);
    }
    if (maxTransactionAge != null && oldestTransaction.isPresent()
        && oldestTransaction.get().compareTo(maxTransactionAge) > 0) {
      failed.add("a transaction open for " + Durations.format(oldestTransaction.get()) + " is over"
          + " --max-transaction-age " + Durations.format(maxTransactionAge));
    }
    Status status = new Status(counts, lag, oldestTransaction, oldest, pauses, failed);
    if (json()) {
      json(db, status);
    } else {
      text(db, status);
    }
    return failed.isEmpty() ? MicOutbox.OK : MicOutbox.CHECK_FAILED;
  }

  /** What one run read, and the checks it failed. */
  private record Status(Map<OutboxStatus, Long> counts, Optional<Duration> lag, Optional<Duration> oldestTransaction,
      Optional<OutboxEvent> oldest, List<OutboxControl.Pause> pauses, List<String> failed) {}

  private void text(Database db, Status st) {
    PrintWriter out = out();
    out.println("outbox " + db.store().table() + " on " + db.dialect().name());
    for (OutboxStatus s : OutboxStatus.values()) {
      out.printf("  %-11s %d%n", s, st.counts().get(s));
    }
    out.println("lag: " + st.lag().map(Durations::format).orElse("none (no live event)"));
    st.oldest().ifPresent(e -> out.println("oldest live event: " + e.id() + " topic " + e.topic() + ", aggregate "
        + e.aggregateType() + "/" + Printable.of(e.aggregateId()) + ", " + e.status() + ", attempts " + e.attempts()
        + ", created " + e.createdAt() + (e.lastError() == null ? "" : ", last error: " + firstLine(e.lastError()))));
    out.println("dead letters: " + st.counts().get(OutboxStatus.DLQ));
    if (st.pauses().isEmpty()) {
      out.println("pauses: none");
    }
    for (OutboxControl.Pause p : st.pauses()) {
      out.println("paused: " + (p.allTopics() ? "every topic" : "topic " + p.topic()) + " since " + p.pausedAt()
          + ": " + Printable.of(p.reason()));
    }
    out.println("oldest open transaction: " + st.oldestTransaction().map(Durations::format).orElse("none seen"));
    st.failed().forEach(f -> out.println("check failed: " + f));
  }

  private void json(Database db, Status st) {
    try (Json j = new Json(out())) {
      j.begin().field("table", db.store().table()).field("database", db.dialect().name()).beginObject("counts");
      for (OutboxStatus s : OutboxStatus.values()) {
        j.field(s.name(), st.counts().get(s));
      }
      j.end().seconds("lagSeconds", st.lag().orElse(null));
      if (st.oldest().isPresent()) {
        OutboxEvent e = st.oldest().get();
        j.beginObject("oldestLive").field("id", e.id().toString()).field("topic", e.topic())
            .field("aggregateType", e.aggregateType()).field("aggregateId", e.aggregateId())
            .field("status", e.status().name()).field("attempts", e.attempts()).field("createdAt", e.createdAt())
            .field("lastError", e.lastError()).end();
      } else {
        j.nullField("oldestLive");
      }
      j.field("deadLetters", st.counts().get(OutboxStatus.DLQ)).beginArray("pauses");
      for (OutboxControl.Pause p : st.pauses()) {
        j.begin().field("topic", p.topic()).field("reason", p.reason()).field("pausedAt", p.pausedAt()).end();
      }
      j.endArray().seconds("oldestTransactionSeconds", st.oldestTransaction().orElse(null)).beginArray("failedChecks");
      st.failed().forEach(j::value);
      j.endArray().end();
    }
  }

  /** The first line of {@code text}, {@link Printable}. */
  static String firstLine(String text) {
    int nl = text.indexOf('\n');
    return Printable.of(nl < 0 ? text : text.substring(0, nl)) + (nl < 0 ? "" : " …");
  }
}
