package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import org.junit.jupiter.api.Test;

/** Retention and dead letters on MariaDB, with a session time zone far from UTC: times must stay UTC. */
class MariaDbOutboxOperationsTest extends OutboxOperationsTest {
  @Override protected TestDatabase database() { return TestDatabase.MARIADB; }

  @Override protected String clockSql() { return "SELECT UTC_TIMESTAMP(6)"; }

  @Override protected String connectionInitSql() { return "SET time_zone = '+05:45'"; }

  /**
   * MariaDB shows InnoDB's transactions only to a role with PROCESS, and refuses the query to others. A
   * least-privilege role's store cannot tell, so it reports no age rather than failing the health check.
   */
  @Test
  void oldestTransactionAgeIsEmptyForARoleWithoutProcess() throws SQLException {
    String user = TestDatabase.uniqueName("mic_noproc");
    String table = TestDatabase.uniqueName("outbox_np");
    try (HikariDataSource root = database().dataSource(2, null)) {
      JdbcOutboxStore.builder().dataSource(root).table(table).build().createSchema();
      try (Connection c = root.getConnection(); Statement s = c.createStatement()) {
        s.execute("CREATE USER '" + user + "'@'%' IDENTIFIED BY 'secret-" + user + "'");
        s.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON " + c.getCatalog() + ".* TO '" + user + "'@'%'");
      }
      HikariConfig config = new HikariConfig();
      config.setJdbcUrl(database().target().url());
      config.setUsername(user);
      config.setPassword("secret-" + user);
      config.setMaximumPoolSize(2);
      try (HikariDataSource limited = new HikariDataSource(config); Connection open = root.getConnection()) {
        JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(limited).table(table).build();
        open.setAutoCommit(false);
        JdbcOutboxStore.builder().dataSource(root).table(table).build().append(open,
            OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build());

        assertThat(store.oldestTransactionAge()).isEmpty();
        assertThat(store.countByStatus()).as("the role reads its table").isNotEmpty();
        open.rollback();
      } finally {
        try (Connection c = root.getConnection(); Statement s = c.createStatement()) {
          s.execute("DROP USER IF EXISTS '" + user + "'@'%'");
        }
        TestDatabase.dropOutbox(root, table);
      }
    }
  }
}
