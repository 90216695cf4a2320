package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.test.OutboxTestDatabase;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code status} on PostgreSQL shows a transaction left open elsewhere in the database, which holds back
 * the cleanup of the outbox's dead rows, and {@code --max-transaction-age} fails the check on it.
 */
class StatusTransactionAgeTest {
  private final OutboxTestDatabase postgres = OutboxTestDatabase.postgres();
  private final String table = postgres.newTable();

  @AfterEach
  void dropTable() {
    postgres.dropStore(table);
  }

  @Test
  void aTransactionLeftOpenFailsTheCheckAndIsShown() throws Exception {
    Database.connect(postgres.url(), postgres.user(), postgres.password(), table).store().createSchema();
    try (Connection open = DriverManager.getConnection(postgres.url(), postgres.user(), postgres.password());
        Statement s = open.createStatement()) {
      open.setAutoCommit(false);
      s.execute("SELECT txid_current()"); // an xid of its own: held until the transaction ends
      Awaitility.await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200))
          .until(() -> status("--max-transaction-age", "1s").exitCode() == MicOutbox.CHECK_FAILED);

      Run text = status("--max-transaction-age", "1s");
      assertThat(text.stdout()).containsPattern("oldest open transaction: \\d+(\\.\\d+)?s\n")
          .containsPattern("check failed: a transaction open for \\d+(\\.\\d+)?s is over --max-transaction-age 1s\n");
      Run json = status("--json", "--max-transaction-age", "1s");
      assertThat(json.stdout()).containsPattern("\"oldestTransactionSeconds\":\\d+(\\.\\d+)?,\"failedChecks\":"
          + "\\[\"a transaction open for \\d+(\\.\\d+)?s is over --max-transaction-age 1s\"]}\n");
      assertThat(status("--max-transaction-age", "1h").exitCode()).isEqualTo(MicOutbox.OK);
      open.rollback();
    }
  }

  private Run status(String... options) {
    return Run.on(postgres, table, Stream.concat(Stream.of("status"), Arrays.stream(options))
        .toArray(String[]::new));
  }
}
