package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.mic.outbox.OutboxException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/** The inbox on PostgreSQL, with a session time zone far from UTC. */
class PostgresJdbcInboxTest extends JdbcInboxTest {
  @Override protected TestDatabase database() { return TestDatabase.POSTGRES; }

  @Override protected String clockSql() { return "SELECT clock_timestamp()"; }

  @Override protected String connectionInitSql() { return "SET TIME ZONE 'Asia/Kathmandu'"; }

  /**
   * PostgreSQL quotes the rows behind a failure ("Failing row contains (…)", "Key (ref)=(…)"), and an
   * effect writes what the message carries: none of it may reach the inbox's messages, whether the effect
   * fails or the commit does (a deferred constraint of the effect's table).
   */
  @Test
  void aFailingEffectOrCommitQuotesNoValueOfTheEffectsRows() throws SQLException {
    String inboxTable = TestDatabase.uniqueName("inbox_values");
    String invoices = TestDatabase.uniqueName("invoice_values");
    String secret = "card-4111111111111111";
    JdbcInbox inbox = JdbcInbox.builder().dataSource(dataSource).table(inboxTable).build();
    try {
      inbox.createSchema();
      sql("CREATE TABLE " + invoices + " (ref varchar(64) NOT NULL CHECK (length(ref) < 32),"
          + " CONSTRAINT " + invoices + "_ref_key UNIQUE (ref) DEFERRABLE INITIALLY DEFERRED)");

      Throwable effectFailed = catchThrowable(() -> inbox.runOnce("billing", "e-1",
          c -> insert(c, invoices, secret + "-with-a-reference-too-long-for-the-check")));
      assertThat(effectFailed).isInstanceOf(OutboxException.class).hasCauseInstanceOf(SQLException.class);
      assertThat(effectFailed.getMessage()).doesNotContain(secret)
          .isEqualTo("the effect of consumer 'billing' for event 'e-1' failed: org.postgresql.util.PSQLException;"
              + " the transaction was rolled back and the event is not recorded");

      Throwable commitFailed = catchThrowable(() -> inbox.runOnce("billing", "e-2", c -> {
        insert(c, invoices, secret);
        insert(c, invoices, secret); // checked at the commit
      }));
      assertThat(commitFailed).isInstanceOf(OutboxStoreException.class);
      for (Throwable t = commitFailed; t != null; t = t.getCause()) {
        assertThat(t.getMessage()).as(t.getClass().getName()).doesNotContain(secret);
      }
      assertThat(commitFailed).hasMessage("inbox table " + inboxTable + ": ERROR: duplicate key value violates"
          + " unique constraint \"" + invoices + "_ref_key\" (SQLState 23505)");

      assertThat(count(inboxTable)).as("nothing recorded").isZero();
      assertThat(count(invoices)).as("nothing applied").isZero();
      assertThat(inbox.runOnce("billing", "e-2", c -> insert(c, invoices, secret))).isTrue();
      assertThat(count(invoices)).isEqualTo(1);
    } finally {
      sql("DROP TABLE IF EXISTS " + invoices);
      sql("DROP TABLE IF EXISTS \"" + inboxTable + "\"");
      sql("DROP TABLE IF EXISTS \"" + inboxTable + "_sequences\"");
    }
  }

  private static void insert(Connection c, String table, String ref) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + table + " (ref) VALUES (?)")) {
      ps.setString(1, ref);
      ps.executeUpdate();
    }
  }

  private long count(String table) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM \"" + table + "\"")) {
      rs.next();
      return rs.getLong(1);
    }
  }

  private void sql(String statement) throws SQLException {
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
