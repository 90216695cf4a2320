package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.test.OutboxTestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** {@code reconcile --domain-sql} on the shared MariaDB server: a SELECT that writes through a function fails. */
class MariaDbDomainQueryTest {
  private final OutboxTestDatabase mariadb = OutboxTestDatabase.mariadb();
  private final String table = mariadb.newTable();
  private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final String victim = "victim_md_" + suffix;
  private final String wipe = "wipe_md_" + suffix;

  @BeforeEach
  void create() {
    Database.connect(mariadb.url(), mariadb.user(), mariadb.password(), table).store().createSchema();
    mariadb.execute("CREATE TABLE " + victim + " (id varchar(20) PRIMARY KEY)");
    mariadb.execute("INSERT INTO " + victim + " VALUES ('1'), ('2')");
    mariadb.execute("CREATE FUNCTION " + wipe + "() RETURNS INT MODIFIES SQL DATA BEGIN DELETE FROM " + victim
        + "; RETURN 1; END");
  }

  @AfterEach
  void drop() {
    mariadb.dropStore(table);
    mariadb.execute("DROP FUNCTION IF EXISTS " + wipe);
    mariadb.execute("DROP TABLE IF EXISTS " + victim);
  }

  @Test
  void aQueryThatWritesThroughAFunctionFailsAndChangesNothing() throws Exception {
    String[] reconcile = {"reconcile", "--topic", "md.created", "--from", "2026-01-01T00:00:00Z", "--to",
        "2099-01-01T00:00:00Z", "--domain-sql", "SELECT " + wipe + "()"};
    Run r = Run.on(mariadb, table, reconcile);
    assertThat(r.exitCode()).as(r.stdout()).isEqualTo(2);
    assertThat(r.stderr()).contains("mic-outbox: --domain-sql failed: ").contains("READ ONLY transaction");
    try (Connection c = mariadb.dataSource().getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*) FROM " + victim)) {
      rs.next();
      assertThat(rs.getLong(1)).isEqualTo(2);
    }
    reconcile[reconcile.length - 1] = "SELECT id FROM " + victim;
    Run reads = Run.on(mariadb, table, reconcile);
    assertThat(reads.stdout()).contains("DIFF domainRowsWithoutEvent: 2 ");
  }
}
