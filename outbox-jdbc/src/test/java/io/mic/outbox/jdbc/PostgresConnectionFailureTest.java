package io.mic.outbox.jdbc;

class PostgresConnectionFailureTest extends ConnectionFailureTest {
  @Override protected TestDatabase database() { return TestDatabase.POSTGRES; }

  @Override protected String withDatabase(String url, String name, String password) {
    return url.replaceFirst("/[^/?]*(\\?.*)?$", "/" + name + "?password=" + password);
  }

  @Override protected String withClosedPort(String url, String password) {
    return "jdbc:postgresql://127.0.0.1:1/postgres?password=" + password;
  }

  @Override protected String unknownDatabaseReason(String name) {
    return "FATAL: database \"" + name + "\" does not exist";
  }
}
