package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PauseState;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxControl;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The command in process on H2, with exact outputs. */
class MicOutboxTest {
  private String url;
  private JdbcOutboxStore store;

  @BeforeEach
  void createOutbox() {
    url = "jdbc:h2:mem:cli-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
    store = Database.connect(url, "sa", "", "outbox").store();
    store.createSchema();
  }

  private Run run(String... args) {
    String[] all = new String[args.length + 4];
    all[0] = "--jdbc-url";
    all[1] = url;
    all[2] = "--user";
    all[3] = "sa";
    System.arraycopy(args, 0, all, 4, args.length);
    return Run.of(Map.of(), all);
  }

  private OutboxEvent append(String topic, String aggregateId) {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", aggregateId).topic(topic).payload("{}").build();
    try (Connection c = DriverManager.getConnection(url, "sa", "")) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
    } catch (SQLException ex) {
      throw new IllegalStateException(ex);
    }
    return e;
  }

  private OutboxEvent dead(String topic, String aggregateId, String error) {
    OutboxEvent e = append(topic, aggregateId);
    OutboxEvent claimed = store.claim("test", 1, Duration.ofMinutes(1), false).get(0);
    assertThat(claimed.id()).isEqualTo(e.id());
    assertThat(store.markDead(claimed, error)).isTrue();
    return e;
  }

  @Test
  void aListThatCannotBeWrittenFailsInsteadOfLookingComplete() {
    dead("order.created", "o-1", "boom");
    // stdout redirected to a full disk: PrintStream keeps the write errors to itself
    PrintStream full = new PrintStream(new OutputStream() {
      @Override
      public void write(int b) throws IOException {
        throw new IOException("No space left on device");
      }
    }, true, StandardCharsets.UTF_8);
    ByteArrayOutputStream err = new ByteArrayOutputStream();

    int code = MicOutbox.execute(new String[] {"--jdbc-url", url, "--user", "sa", "dlq", "list"}, full,
        new PrintStream(err, true, StandardCharsets.UTF_8), Map.of());

    assertThat(code).isEqualTo(MicOutbox.OUTPUT_FAILED);
    assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo("1 dead letter(s)\n"
        + "mic-outbox: stdout refused the output (a full"
        + " disk, say): what it shows is incomplete; what the command changed, if anything, is done\n");
  }

  @Test
  void statusOfAnEmptyOutbox() {
    Run r = run("status");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).isEqualTo("""
        outbox outbox on H2
          PENDING     0
          PROCESSING  0
          DISPATCHED  0
          DLQ         0
        lag: none (no live event)
        dead letters: 0
        pauses: none
        oldest open transaction: none seen
        """);
    assertThat(run("status", "--json").stdout()).isEqualTo("{\"table\":\"outbox\",\"database\":\"H2\",\"counts\":"
        + "{\"PENDING\":0,\"PROCESSING\":0,\"DISPATCHED\":0,\"DLQ\":0},\"lagSeconds\":null,\"oldestLive\":null,"
        + "\"deadLetters\":0,\"pauses\":[],\"oldestTransactionSeconds\":null,\"failedChecks\":[]}\n");
  }

  @Test
  void statusShowsTheOldestLiveEventPausesAndFailsItsChecks() {
    dead("billing.issued", "3", "boom");
    OutboxEvent first = append("order.created", "1");
    append("order.created", "2");
    OutboxControl.builder().store(store).build().pause("billing.issued", "schema change");
    Run r = run("--json", "status", "--max-dlq", "0");
    assertThat(r.exitCode()).isEqualTo(1);
    assertThat(r.stdout()).contains("\"counts\":{\"PENDING\":2,\"PROCESSING\":0,\"DISPATCHED\":0,\"DLQ\":1}")
        .contains("\"oldestLive\":{\"id\":\"" + first.id() + "\",\"topic\":\"order.created\",\"aggregateType\":"
            + "\"order\",\"aggregateId\":\"1\",\"status\":\"PENDING\",\"attempts\":0,")
        .contains("\"pauses\":[{\"topic\":\"billing.issued\",\"reason\":\"schema change\",\"pausedAt\":")
        .endsWith("\"failedChecks\":[\"1 dead letter(s), over --max-dlq 0\"]}\n");
    assertThat(run("status", "--max-dlq", "1").exitCode()).isZero();
  }

  @Test
  void pauseAndResumeAreSeenByTheStore() {
    Run paused = run("pause", "--reason", "consumer deploy");
    assertThat(paused.exitCode()).as(paused.stderr()).isZero();
    assertThat(paused.stdout()).startsWith("paused every topic at ").endsWith(": consumer deploy\n");
    assertThat(store.pauseState()).isEqualTo(PauseState.ALL);
    assertThat(run("pause", "--reason", "again").stdout()).startsWith("every topic was paused already, since ")
        .endsWith(": consumer deploy\n");
    assertThat(run("pause", "--topic", "billing.issued", "--reason", "billing v2").exitCode()).isZero();

    Run resumed = run("resume");
    assertThat(resumed.stdout()).startsWith("resumed every topic\nstill paused: topic billing.issued since ")
        .endsWith(": billing v2\n");
    assertThat(store.pauseState()).isEqualTo(PauseState.topics(java.util.Set.of("billing.issued")));
    assertThat(run("resume", "--topic", "billing.issued", "--json").stdout())
        .isEqualTo("{\"resumed\":true,\"topic\":\"billing.issued\",\"stillPaused\":[]}\n");
    assertThat(run("resume").stdout()).isEqualTo("every topic was not paused\n");
    assertThat(store.pauseState()).isEqualTo(PauseState.NONE);
  }

  @Test
  void pauseNeedsAReason() {
    Run r = run("pause", "--topic", "x");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.stderr()).isEqualTo("mic-outbox: Missing required option: '--reason=TEXT'\n"
        + "Try 'mic-outbox --help' or 'mic-outbox help COMMAND' for the options.\n");
  }

  @Test
  void deadLettersAreListedRedrivenAndPurged() {
    OutboxEvent a = dead("order.created", "1", "timeout");
    OutboxEvent b = dead("billing.issued", "2", "401 Unauthorized");
    OutboxEvent c = dead("billing.issued", "3", "401 Unauthorized");

    Run list = run("dlq", "list", "--topic", "billing.issued");
    assertThat(list.stdout().lines().map(l -> l.substring(0, 36)).toList())
        .containsExactly(b.id().toString(), c.id().toString());
    assertThat(list.stdout().lines().findFirst().orElseThrow())
        .startsWith(b.id() + "  billing.issued  order/2  attempts 1  created ").endsWith("  401 Unauthorized");
    assertThat(list.stderr()).isEqualTo("2 dead letter(s)\n");

    Run all = run("dlq", "redrive", "--all");
    assertThat(all.exitCode()).isEqualTo(2);
    assertThat(all.stderr()).isEqualTo("mic-outbox: dlq redrive --all applies to every dead letter: add --yes to"
        + " confirm\n");
    assertThat(store.countByStatus().get(OutboxStatus.DLQ)).isEqualTo(3);

    Run one = run("dlq", "redrive", "--id", a.id().toString());
    assertThat(one.stdout()).isEqualTo("redriven: 1 dead letter(s), PENDING again with their attempts reset\n");
    assertThat(store.find(a.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
    Run again = run("dlq", "redrive", "--id", a.id().toString());
    assertThat(again.exitCode()).isEqualTo(1);
    assertThat(again.stderr()).isEqualTo("mic-outbox: no dead letter " + a.id() + ": it does not exist or is not in"
        + " the DLQ (mic-outbox dlq list shows them)\n");

    assertThat(run("dlq", "purge", "--error-contains", "unauthorized", "--json").stdout())
        .isEqualTo("{\"purged\":2}\n");
    assertThat(store.find(b.id())).isEmpty();
    assertThat(store.find(c.id())).isEmpty();
  }

  @Test
  void heldAggregatesAreListed() {
    assertThat(run("dlq", "held").stderr()).isEqualTo("0 held aggregate(s)\n");
    OutboxEvent dead = dead("order.created", "7", "timeout");
    dead("order.created", "8", "timeout"); // nothing waits behind it
    OutboxEvent waiting = append("order.changed", "7");

    Run held = run("dlq", "held");
    assertThat(held.stdout()).isEqualTo("order/7  dead " + dead.id() + "  waiting 1\n");
    assertThat(held.stderr()).isEqualTo("1 held aggregate(s): mic-outbox dlq redrive --id UUID publishes the dead"
        + " letter first, then the waiting events\n");
    assertThat(run("--json", "dlq", "held").stdout()).isEqualTo("{\"heldAggregates\":[{\"aggregateType\":\"order\","
        + "\"aggregateId\":\"7\",\"deadEventId\":\"" + dead.id() + "\",\"waiting\":1}]}\n");
    assertThat(store.find(waiting.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
  }

  @Test
  void everyDeadLetterIsPurgedOrRedrivenWithAllAndYes() {
    OutboxEvent a = dead("billing.issued", "1", "timeout");
    OutboxEvent b = dead("order.created", "2", "401 Unauthorized");
    Run yesAlone = run("dlq", "purge", "--topic", "billing.issued", "--yes");
    assertThat(yesAlone.exitCode()).isEqualTo(2);
    assertThat(yesAlone.stderr()).isEqualTo("mic-outbox: --yes confirms --all only; filtered purges need no"
        + " confirmation\n");
    assertThat(run("dlq", "purge", "--all", "--yes", "--json").stdout()).isEqualTo("{\"purged\":2}\n");
    assertThat(store.find(a.id())).isEmpty();
    assertThat(store.find(b.id())).isEmpty();

    OutboxEvent c = dead("billing.issued", "3", "timeout");
    OutboxEvent d = dead("order.created", "4", "timeout");
    assertThat(run("dlq", "redrive", "--all", "--yes").stdout())
        .isEqualTo("redriven: 2 dead letter(s), PENDING again with their attempts reset\n");
    assertThat(store.find(c.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(store.find(d.id()).orElseThrow().status()).isEqualTo(OutboxStatus.PENDING);
  }

  @Test
  void purgeDeletesOnlyOldDispatchedEvents() {
    OutboxEvent e = append("order.created", "1");
    store.markDispatched(store.claim("t", 1, Duration.ofMinutes(1), false));
    try (Connection c = DriverManager.getConnection(url, "sa", ""); java.sql.Statement st = c.createStatement()) {
      // eight days ago, as far as this event's times are concerned
      st.execute("UPDATE \"outbox\" SET created_at = DATEADD('DAY', -8, created_at),"
          + " dispatched_at = DATEADD('DAY', -8, dispatched_at) WHERE id = '" + e.id() + "'");
    } catch (java.sql.SQLException ex) {
      throw new IllegalStateException(ex);
    }
    append("order.created", "2");
    Run r = run("purge", "--older-than", "7d");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).isEqualTo("purged: 1 dispatched event(s) older than 168h\n");
    assertThat(r.stderr()).isEqualTo("purging events dispatched more than 168h ago …\n");
    assertThat(store.find(e.id())).isEmpty();
    assertThat(store.countByStatus().get(OutboxStatus.PENDING)).isEqualTo(1);
  }

  private void dispatchedEightDaysAgo(int count) {
    for (int i = 1; i <= count; i++) {
      append("order.created", "" + i);
    }
    assertThat(store.markDispatched(store.claim("t", count, Duration.ofMinutes(1), false))).hasSize(count);
    try (Connection c = DriverManager.getConnection(url, "sa", ""); java.sql.Statement st = c.createStatement()) {
      st.execute("UPDATE \"outbox\" SET created_at = DATEADD('DAY', -8, created_at),"
          + " dispatched_at = DATEADD('DAY', -8, dispatched_at)");
    } catch (java.sql.SQLException ex) {
      throw new IllegalStateException(ex);
    }
  }

  @Test
  void purgeReportsProgressOnStderrAndTheSummaryOnStdout() {
    dispatchedEightDaysAgo(5);
    Run r = run("purge", "--older-than", "7d", "--batch-size", "2", "--progress-interval", "0s");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).isEqualTo("purged: 5 dispatched event(s) older than 168h\n");
    assertThat(r.stderr()).matches("purging events dispatched more than 168h ago …\n"
        + "purge: 2 event\\(s\\) deleted so far, \\d+/s\n"
        + "purge: 4 event\\(s\\) deleted so far, \\d+/s\n"
        + "purge: 5 event\\(s\\) deleted so far, \\d+/s\n");
    assertThat(store.countByStatus().get(OutboxStatus.DISPATCHED)).isZero();

    dispatchedEightDaysAgo(3);
    Run json = run("purge", "--older-than", "7d", "--batch-size", "2", "--progress-interval", "0s", "--json");
    assertThat(json.stdout()).isEqualTo("{\"purged\":3}\n");
    assertThat(json.stderr().lines().skip(1)).hasSize(2).allMatch(l -> l.matches("purge: [23] event\\(s\\) deleted"
        + " so far, \\d+/s"));
  }

  @Test
  void archiveReportsProgressOnStderrAndTheSummaryOnStdout(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) {
    dispatchedEightDaysAgo(5);
    Run r = run("archive", "--older-than", "7d", "--to-dir", dir.toString(), "--batch-size", "2",
        "--progress-interval", "0s");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).isEqualTo("archived: 5 event(s), purged 5, in 3 batch(es)\n");
    assertThat(r.stderr()).matches("archiving events dispatched more than 168h ago, 2 per page …\n"
        + "archive: 2 event\\(s\\) archived, 2 purged, 1 page\\(s\\) so far, \\d+/s\n"
        + "archive: 4 event\\(s\\) archived, 4 purged, 2 page\\(s\\) so far, \\d+/s\n"
        + "archive: 5 event\\(s\\) archived, 5 purged, 3 page\\(s\\) so far, \\d+/s\n");

    dispatchedEightDaysAgo(1);
    Run quiet = run("archive", "--older-than", "7d", "--to-dir", dir.toString(), "--json"); // default: every 10 s
    assertThat(quiet.stdout()).isEqualTo("{\"archived\":1,\"purged\":1,\"batches\":1}\n");
    assertThat(quiet.stderr()).isEqualTo("archiving events dispatched more than 168h ago, 1000 per page …\n");
    assertThat(run("archive", "--older-than", "7d", "--to-dir", dir.toString(), "--progress-interval", "-PT1S")
        .stderr()).isEqualTo("mic-outbox: --progress-interval must be >= 0, was -1s\n");
  }

  @Test
  void badArgumentsAreExit2SayingWhatToFix() {
    assertThat(run("purge", "--older-than", "a week").stderr()).startsWith("mic-outbox: Invalid value for option"
        + " '--older-than': 'a week' is not a duration: use e.g. 30s, 15m, 12h, 7d or PT15M\n");
    assertThat(run("dlq", "purge").stderr()).isEqualTo("mic-outbox: dlq purge needs filters (--topic,"
        + " --aggregate-type, --aggregate-id, --created-from, --created-before, --error-contains) or --all --yes\n");
    assertThat(run("archive", "--older-than", "7d").stderr())
        .isEqualTo("mic-outbox: archive needs a sink: --to-dir DIR and/or --clickhouse-url URL\n");
    Run noCommand = run();
    assertThat(noCommand.exitCode()).isEqualTo(2);
    assertThat(noCommand.stderr()).startsWith("mic-outbox: a command is required: status, dlq, pause, resume,"
        + " purge, archive, reconcile or doctor\n");
    Run badTable = Run.of(Map.of(), "--jdbc-url", url, "--table", "a;b", "status");
    assertThat(badTable.exitCode()).isEqualTo(2);
    assertThat(badTable.stderr()).startsWith("mic-outbox: --table 'a;b' is invalid: use a name matching");
  }

  @Test
  void anUnreachableDatabaseIsExit2WithoutThePassword() {
    Run r = Run.of(Map.of(MicOutbox.PASSWORD_ENV, "s3cret-pw"), "--jdbc-url",
        "jdbc:postgresql://127.0.0.1:1/none?connectTimeout=2", "--user", "ops", "status");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.stderr()).startsWith("mic-outbox: cannot connect to jdbc:postgresql://127.0.0.1:1/none?connectTimeout=2: ")
        .endsWith("; check --jdbc-url, --user and the password (--password or MIC_OUTBOX_PASSWORD)\n")
        .doesNotContain("s3cret-pw").doesNotContain("\tat ");
    Run noDriver = Run.of(Map.of(), "--jdbc-url", "jdbc:oracle:thin:@x:1521/y", "status");
    assertThat(noDriver.stderr()).endsWith("; use a jdbc:postgresql:, jdbc:mariadb:, jdbc:mysql: or jdbc:h2: URL\n");
    assertThat(List.of(noDriver.exitCode())).containsExactly(2);
  }
}
