package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The effects that need no inbox, on a real PostgreSQL (a schema of the test's own, so the sample's table names
 * stay as documented): applied again, they change nothing, in auto-commit mode.
 */
class IdempotentEffectsTest {
  private final String schema = "t" + UUID.randomUUID().toString().replace("-", "").substring(0, 12);
  private Connection c;

  @BeforeEach
  void connect() throws SQLException {
    try {
      c = DriverManager.getConnection(
          System.getenv().getOrDefault("MIC_TEST_POSTGRES_URL", "jdbc:postgresql://127.0.0.1:5432/test"),
          System.getenv().getOrDefault("MIC_TEST_POSTGRES_USER", "postgres"),
          System.getenv().getOrDefault("MIC_TEST_POSTGRES_PASSWORD", ""));
    } catch (SQLException e) {
      Assumptions.assumeFalse("true".equalsIgnoreCase(System.getenv("CI")), "PostgreSQL required under CI: " + e);
      Assumptions.abort("PostgreSQL unreachable: " + e);
    }
    try (Statement s = c.createStatement()) {
      s.execute("CREATE SCHEMA " + schema);
      s.execute("SET search_path TO " + schema);
      s.execute("CREATE TABLE payment (event_id varchar(255) PRIMARY KEY, order_id varchar(255) NOT NULL,"
          + " amount_cents bigint NOT NULL)");
      s.execute("CREATE TABLE order_status (order_id varchar(255) PRIMARY KEY, status varchar(32) NOT NULL,"
          + " sequence bigint NOT NULL)");
    }
  }

  @AfterEach
  void drop() throws SQLException {
    if (c != null) {
      try (Statement s = c.createStatement()) {
        s.execute("DROP SCHEMA " + schema + " CASCADE");
      }
      c.close();
    }
  }

  @Test
  void aPaymentKeyedByItsEventIdIsWrittenOnce() throws SQLException {
    String eventId = UUID.randomUUID().toString();
    assertThat(IdempotentEffects.recordPayment(c, eventId, "42", 1250)).isTrue();
    assertThat(IdempotentEffects.recordPayment(c, eventId, "42", 1250)).isFalse();
    assertThat(IdempotentEffects.recordPayment(c, UUID.randomUUID().toString(), "42", 300)).isTrue();
    assertThat(query("SELECT count(*) || ':' || sum(amount_cents) FROM payment")).isEqualTo("2:1550");
  }

  @Test
  void aStateMovedBySequenceIgnoresDuplicatesAndLateEvents() throws SQLException {
    assertThat(IdempotentEffects.projectStatus(c, "42", "PLACED", 1)).isTrue();
    assertThat(IdempotentEffects.projectStatus(c, "42", "PAID", 2)).isTrue();
    assertThat(IdempotentEffects.projectStatus(c, "42", "PAID", 2)).isFalse();     // redelivered
    assertThat(IdempotentEffects.projectStatus(c, "42", "PLACED", 1)).isFalse();   // redelivered late
    assertThat(query("SELECT status || ':' || sequence FROM order_status WHERE order_id = '42'")).isEqualTo("PAID:2");
  }

  private String query(String sql) throws SQLException {
    try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
      rs.next();
      return rs.getString(1);
    }
  }
}
