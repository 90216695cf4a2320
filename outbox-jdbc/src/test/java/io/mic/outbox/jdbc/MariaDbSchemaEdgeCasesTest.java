package io.mic.outbox.jdbc;

import java.util.ArrayList;
import java.util.List;

class MariaDbSchemaEdgeCasesTest extends SchemaEdgeCasesTest {
  @Override protected TestDatabase database() { return TestDatabase.MARIADB; }

  @Override protected String indexNamesOfTable() {
    return "SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = DATABASE()"
        + " AND table_name = ?";
  }

  @Override protected int outboxIndexCount() { return 3; }

  @Override protected String tablesLike() {
    return "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name LIKE ?";
  }

  @Override protected String quote(String name) {
    return '`' + name + '`';
  }

  @Override protected List<String> createRuntimeRole(String role, String password, List<String> outboxTables,
      String inbox, String inboxGuard) {
    List<String> sql = new ArrayList<>(List.of("CREATE USER '" + role + "'@'%' IDENTIFIED BY '" + password + "'"));
    outboxTables.forEach(t -> sql.add("GRANT SELECT, INSERT, UPDATE, DELETE ON " + quote(t) + " TO '" + role + "'@'%'"));
    sql.add("GRANT SELECT, INSERT, DELETE ON " + quote(inbox) + " TO '" + role + "'@'%'");
    sql.add("GRANT SELECT, INSERT, UPDATE ON " + quote(inboxGuard) + " TO '" + role + "'@'%'");
    return sql;
  }

  @Override protected List<String> dropRuntimeRole(String role) {
    return List.of("DROP USER '" + role + "'@'%'");
  }
}
