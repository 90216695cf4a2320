package io.mic.outbox.jdbc;

import java.util.ArrayList;
import java.util.List;

class PostgresSchemaEdgeCasesTest extends SchemaEdgeCasesTest {
  @Override protected TestDatabase database() { return TestDatabase.POSTGRES; }

  @Override protected String indexNamesOfTable() {
    return "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema() AND tablename = ?";
  }

  /** The lean schema: claim, head and DLQ indexes (retention walks the primary key). */
  @Override protected int outboxIndexCount() { return 5; }

  @Override protected String tablesLike() {
    return "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE ?";
  }

  @Override protected List<String> createRuntimeRole(String role, String password, List<String> outboxTables,
      String inbox, String inboxGuard) {
    List<String> sql = new ArrayList<>(List.of("CREATE ROLE " + role + " LOGIN PASSWORD '" + password + "'",
        "GRANT USAGE ON SCHEMA public TO " + role));
    outboxTables.forEach(t -> sql.add("GRANT SELECT, INSERT, UPDATE, DELETE ON " + quote(t) + " TO " + role));
    sql.add("GRANT SELECT, INSERT, DELETE ON " + quote(inbox) + " TO " + role);
    sql.add("GRANT SELECT, INSERT, UPDATE ON " + quote(inboxGuard) + " TO " + role);
    return sql;
  }

  @Override protected List<String> dropRuntimeRole(String role) {
    return List.of("DROP OWNED BY " + role, "DROP ROLE " + role);
  }
}
