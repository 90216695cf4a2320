package io.mic.outbox.jdbc;

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
import javax.sql.DataSource;

/** The PostgreSQL DDL createSchema() ran in earlier versions, for the tests of its upgrades. */
enum OldSchemas {
  /** Before the lean indexes: an aggregate index and a dispatched index. */
  BEFORE_LEAN("io/mic/outbox/jdbc/schema-before-lean/postgresql.sql"),
  /** Schema version 1, before parked events: the claim index without them, no parked index. */
  BEFORE_PARKING("io/mic/outbox/jdbc/schema-before-parking/postgresql.sql");

  private final String resource;

  OldSchemas(String resource) {
    this.resource = resource;
  }

  /** Creates {@code table} (and its companions) with this old DDL. */
  void create(DataSource dataSource, String table) {
    String ddl;
    try (InputStream in = OldSchemas.class.getClassLoader().getResourceAsStream(resource)) {
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

  /** The names of {@code table}'s indexes. */
  static List<String> indexes(DataSource dataSource, String table) {
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
