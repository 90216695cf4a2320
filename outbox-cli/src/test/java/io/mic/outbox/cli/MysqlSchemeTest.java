package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.test.OutboxTestDatabase;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A {@code jdbc:mysql:} URL, as MySQL users write it, is served by the MariaDB driver the jar carries; here
 * against the shared MariaDB server (no MySQL server runs these tests).
 */
class MysqlSchemeTest {
  private final OutboxTestDatabase mariadb = OutboxTestDatabase.mariadb();
  private final String table = mariadb.newTable();

  @AfterEach
  void drop() {
    mariadb.dropStore(table);
  }

  @Test
  void aMysqlUrlIsServedByTheMariaDbDriver() {
    String url = mariadb.url().replace("jdbc:mariadb:", "jdbc:mysql:");
    Database.connect(url, mariadb.user(), mariadb.password(), table).store().createSchema();
    Run r = Run.of(Map.of(MicOutbox.PASSWORD_ENV, mariadb.password()), "--jdbc-url", url, "--user", mariadb.user(),
        "--table", table, "status");
    assertThat(r.exitCode()).as(r.stderr()).isZero();
    assertThat(r.stdout()).startsWith("outbox " + table + " on MariaDB\n");
  }
}
