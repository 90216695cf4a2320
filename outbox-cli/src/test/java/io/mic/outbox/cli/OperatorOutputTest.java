package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxControl;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** What an operator or a script reads from the command, on H2 in process: errors, escapes, pipes, help. */
class OperatorOutputTest {
  private String url;
  private JdbcOutboxStore store;

  @BeforeEach
  void createOutbox() {
    url = "jdbc:h2:mem:cli-out-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
    store = Database.connect(url, "sa", "", "outbox").store();
    store.createSchema();
  }

  private Run run(String... args) {
    String[] all = new String[args.length + 4];
    System.arraycopy(new String[] {"--jdbc-url", url, "--user", "sa"}, 0, all, 0, 4);
    System.arraycopy(args, 0, all, 4, args.length);
    return Run.of(Map.of(), all);
  }

  @Test
  void withJsonAnErrorIsAJsonDocumentOnStdoutToo() {
    Run usage = run("--json", "dlq", "purge");
    assertThat(usage.exitCode()).isEqualTo(2);
    assertThat(usage.stdout()).isEqualTo("{\"error\":\"dlq purge needs filters (--topic, --aggregate-type,"
        + " --aggregate-id, --created-from, --created-before, --error-contains) or --all --yes\",\"exitCode\":2}\n");
    Run badOption = run("status", "--max-lag", "soon", "--json");
    assertThat(badOption.exitCode()).isEqualTo(2);
    assertThat(badOption.stdout()).startsWith("{\"error\":\"Invalid value for option '--max-lag': 'soon' is not a"
        + " duration").endsWith("\",\"exitCode\":2}\n");
    Run down = Run.of(Map.of(), "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/none?connectTimeout=2", "--json",
        "status");
    assertThat(down.stdout()).startsWith("{\"error\":\"cannot connect to jdbc:postgresql://127.0.0.1:1/none")
        .endsWith(",\"exitCode\":2}\n");
    assertThat(run("status").stdout()).doesNotContain("error"); // without --json, stdout stays for results
    assertThat(run("dlq", "purge").stdout()).isEmpty();
  }

  @Test
  void aPauseReasonWithLineBreaksOrTerminalEscapesIsPrintedEscaped() {
    OutboxControl.builder().store(store).build().pause("billing.issued", "deploy\n\u001b[2Jall good\r\u009b1m");
    Run r = run("status");
    assertThat(r.stdout()).contains(": deploy\\n\\u001b[2Jall good\\r\\u009b1m\n")
        .doesNotContain("\u001b").doesNotContain("\r").doesNotContain("\u009b");
    // JSON carries the reason as data, in JSON's escapes; a script decides what to print
    assertThat(run("--json", "status").stdout()).contains("\"reason\":\"deploy\\n\\u001B[2Jall good\\r\u009b1m\"");
  }

  @Test
  void aReaderThatStopsReadingIsNotAnError() {
    // what `mic-outbox status | head -1` does to the command's stdout once head has its line
    OutputStream closedPipe = new OutputStream() {
      @Override
      public void write(int b) throws IOException {
        throw new IOException("Broken pipe");
      }
    };
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = MicOutbox.execute(new String[] {"--jdbc-url", url, "--user", "sa", "status"}, closedPipe,
        new PrintStream(err, true, StandardCharsets.UTF_8), Map.of());
    assertThat(code).isZero();
    assertThat(err.toString(StandardCharsets.UTF_8)).isEmpty();
  }

  @Test
  void purgeOlderThanZeroPurgesEveryDispatchedEvent() throws Exception {
    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
    try (Connection c = DriverManager.getConnection(url, "sa", "")) {
      c.setAutoCommit(false);
      store.append(c, e);
      c.commit();
    }
    assertThat(store.markDispatched(store.claim("t", 1, Duration.ofMinutes(1), false))).hasSize(1);
    Run r = run("purge", "--older-than", "0s");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).isEqualTo("purged: 1 dispatched event(s) older than 0s\n");
    assertThat(store.countByStatus().get(OutboxStatus.DISPATCHED)).isZero();
    assertThat(run("purge", "--older-than", "-PT1S").stderr())
        .isEqualTo("mic-outbox: --older-than must be >= 0 (0s: every dispatched event), was -1s\n");
  }

  @Test
  void helpListsEveryExitCode() {
    String help = Run.of(Map.of(), "--help").stdout();
    assertThat(help).contains("  0   done").contains("  1   a check failed").contains("  2   bad arguments")
        .contains("  3   stdout refused the output");
  }
}
