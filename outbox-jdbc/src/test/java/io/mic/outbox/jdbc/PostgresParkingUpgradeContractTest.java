package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * The whole store contract on tables that createSchema() upgraded from the schema before parked events
 * (PostgreSQL, schema version 1): each test's table is first created with the old DDL, then createSchema()
 * replaces its claim index and adds the parked events' index.
 */
class PostgresParkingUpgradeContractTest extends JdbcContractTest {
  static final String OLD_DDL = "io/mic/outbox/jdbc/schema-before-parking/postgresql.sql";

  @Override
  protected TestDatabase database() {
    return TestDatabase.POSTGRES;
  }

  @Override
  protected void beforeCreateSchema(String table) {
    createOldSchema(dataSource, table);
    assertThat(PostgresLeanUpgradeContractTest.indexes(dataSource, table)).contains(table + "_claim_idx")
        .doesNotContain(table + "_parked_idx");
  }

  /** The old DDL for {@code table}, as createSchema() ran it before parked events. */
  static void createOldSchema(javax.sql.DataSource dataSource, String table) {
    String ddl;
    try (InputStream in = PostgresParkingUpgradeContractTest.class.getClassLoader().getResourceAsStream(OLD_DDL)) {
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
}
