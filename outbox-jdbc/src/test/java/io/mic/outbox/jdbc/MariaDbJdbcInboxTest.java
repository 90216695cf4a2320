package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/** The inbox on MariaDB, with a session time zone far from UTC: processed_at must stay UTC. */
class MariaDbJdbcInboxTest extends JdbcInboxTest {
  @Override protected TestDatabase database() { return TestDatabase.MARIADB; }

  @Override protected String clockSql() { return "SELECT UTC_TIMESTAMP(6)"; }

  @Override protected String connectionInitSql() { return "SET time_zone = '-09:30'"; }

  /** INSERT IGNORE would silently truncate an id too long for the column; the inbox throws instead. */
  @Test
  void anErrorThatIgnoreDowngradesIsThrownNotSwallowed() throws SQLException {
    String narrow = TestDatabase.uniqueName("inbox_narrow");
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      s.execute("CREATE TABLE " + narrow + " (consumer VARCHAR(255) NOT NULL, event_id VARCHAR(10) NOT NULL,"
          + " processed_at DATETIME(6) NOT NULL, PRIMARY KEY (consumer, event_id))");
    }
    try (Connection c = dataSource.getConnection()) {
      JdbcInbox inbox = JdbcInbox.builder().dataSource(dataSource).table(narrow).build();
      c.setAutoCommit(false);
      assertThatThrownBy(() -> inbox.tryRecord(c, "billing", "longer-than-ten"))
          .isInstanceOf(OutboxStoreException.class)
          .hasMessageContaining("inbox insert was not clean: Data truncated for column 'event_id'")
          .hasMessageContaining("(error 1265)");
      c.rollback();
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT COUNT(*) FROM " + narrow)) {
        rs.next();
        assertThat(rs.getInt(1)).isZero();
      }
      c.commit();
    } finally {
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE " + narrow);
      }
    }
  }
}
