package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;

/**
 * The whole store contract on tables that createSchema() upgraded from the schema before the lean indexes
 * (PostgreSQL): each test's table is first created with the old DDL and holds dispatched and pending
 * rows of its own, then createSchema() replaces its indexes.
 */
class PostgresLeanUpgradeContractTest extends JdbcContractTest {
  static final String OLD_DDL = "io/mic/outbox/jdbc/schema-before-lean/postgresql.sql";

  @Override
  protected TestDatabase database() {
    return TestDatabase.POSTGRES;
  }

  @Override
  protected void beforeCreateSchema(String table) {
    createOldSchema(dataSource, table);
    assertThat(indexes(dataSource, table)).contains(table + "_aggregate_idx", table + "_dispatched_idx");
  }

  /** The old DDL for {@code table}, as createSchema() ran it before the lean schema. */
  static void createOldSchema(javax.sql.DataSource dataSource, String table) {
    String ddl;
    try (InputStream in = PostgresLeanUpgradeContractTest.class.getClassLoader().getResourceAsStream(OLD_DDL)) {
      ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8).replaceAll("(?m)--.*$", "")
          .replaceAll("\\boutbox(_\\w+)?\\b", table + "$1");
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
      for (String statement : ddl.split(";\\s*(?:\\n|$)")) {
        if (!statement.isBlank()) {
          s.execute(statement);
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  static List<String> indexes(javax.sql.DataSource dataSource, String table) {
    List<String> names = new ArrayList<>();
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT indexname FROM pg_indexes WHERE tablename = ?")) {
      ps.setString(1, table);
      try (ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
    return names;
  }
}
