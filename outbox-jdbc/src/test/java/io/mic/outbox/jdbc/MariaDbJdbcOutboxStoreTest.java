package io.mic.outbox.jdbc;

class MariaDbJdbcOutboxStoreTest extends JdbcOutboxStoreTest {
  @Override protected TestDatabase database() { return TestDatabase.MARIADB; }

  @Override protected String expectedDialect() { return "MariaDB"; }

  @Override protected String[] createAndDropSchema(String name) {
    return new String[] {"CREATE DATABASE " + name, "DROP DATABASE " + name};
  }

  @Override protected String indexNamesOfSchema() {
    return "SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = ?";
  }

  @Override protected String clockSql() { return "SELECT UTC_TIMESTAMP(6)"; }

  @Override protected String lockWaitsSql() {
    return "SELECT COUNT(*) FROM information_schema.INNODB_TRX t JOIN information_schema.PROCESSLIST p"
        + " ON p.ID = t.trx_mysql_thread_id WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()";
  }
}
