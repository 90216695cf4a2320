package io.mic.outbox.jdbc;

import java.util.List;
import java.util.UUID;

class MariaDbConnectionFailureTest extends ConnectionFailureTest {
  private final String user = "h_jdbc_cf_" + UUID.randomUUID().toString().substring(0, 8);

  @Override protected TestDatabase database() { return TestDatabase.MARIADB; }

  @Override protected String user() { return user; }

  @Override protected List<String> createLogin(String password) {
    return List.of("CREATE USER '" + user + "'@'%' IDENTIFIED BY '" + password + "'");
  }

  @Override protected List<String> dropLogin() {
    return List.of("DROP USER IF EXISTS '" + user + "'@'%'");
  }

  @Override protected String withDatabase(String url, String name, String password) {
    return url.replaceFirst("/[^/?]*(\\?.*)?$", "/" + name + "?password=" + password);
  }

  @Override protected String withClosedPort(String url, String password) {
    return "jdbc:mariadb://127.0.0.1:1/test?password=" + password;
  }

  /** MariaDB does not tell a user without rights on a database whether it exists. */
  @Override protected String unknownDatabaseReason(String name) {
    return "Access denied for user '" + user + "'@'%' to database '" + name + "'";
  }
}
