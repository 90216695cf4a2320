package io.mic.outbox.cli;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.jdbc.Dialect;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxControl;
import io.mic.outbox.jdbc.OutboxMaintenance;
import io.mic.outbox.jdbc.OutboxStoreException;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.Properties;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * The database of one run: a {@link DataSource} opening plain {@link DriverManager} connections (a command
 * runs a few statements, a pool would only add threads and logs), and the outbox store on it.
 */
final class Database {
  private static final int LOGIN_TIMEOUT_SECONDS = 10;

  private final DataSource dataSource;
  private final JdbcOutboxStore store;
  private final String url;

  private Database(DataSource dataSource, JdbcOutboxStore store, String url) {
    this.dataSource = dataSource;
    this.store = store;
    this.url = url;
  }

  static Database connect(String url, String user, String password, String table) {
    try {
      JdbcOutboxStore.builder().table(table); // a bad name is a usage error before any connection
    } catch (InvalidConfigurationException e) {
      throw new UsageException("--" + e.getMessage()); // "table 'a;b' is invalid: …"
    }
    if (!url.startsWith("jdbc:")) {
      throw new UsageException("--jdbc-url '" + url + "' is not a JDBC URL: use e.g."
          + " jdbc:postgresql://host:5432/db, jdbc:mariadb://host:3306/db or jdbc:h2:./data/app");
    }
    if (hasUserInfo(url)) { // the drivers take it for a host or a port, and their messages repeat it
      throw new UsageException("--jdbc-url '" + OutboxStoreException.redact(url) + "' names a user and password"
          + " before the host, which the JDBC drivers do not read: remove them from the URL and give --user NAME,"
          + " the password in " + MicOutbox.PASSWORD_ENV + " or by --password (asked for when given alone)");
    }
    DataSource ds = new DriverManagerDataSource(forDriver(url), user, password);
    try (Connection c = ds.getConnection()) {
      c.getMetaData();
    } catch (SQLException e) {
      throw unreachable(url, e);
    }
    try {
      return new Database(ds, JdbcOutboxStore.builder().dataSource(ds).table(table).build(), url);
    } catch (OutboxStoreException e) {
      throw unreachable(url, e);
    }
  }

  /**
   * The URL for {@link DriverManager}: the MariaDB driver the jar carries serves {@code jdbc:mysql:} only when
   * the URL says {@code permitMysqlScheme}. Messages show the URL as the operator gave it.
   */
  private static String forDriver(String url) {
    if (!url.startsWith("jdbc:mysql:") || url.contains("permitMysqlScheme")) {
      return url;
    }
    return url + (url.indexOf('?') < 0 ? "?" : "&") + "permitMysqlScheme";
  }

  /**
   * {@code jdbc:…//user:secret@host…}: an {@code @} between {@code //} and the query ({@code ?}) or properties
   * ({@code ;}), so a secret holding {@code /} or {@code @} is found too; {@code ?user=me@realm} is not user-info.
   */
  private static boolean hasUserInfo(String url) {
    int authority = url.indexOf("//");
    if (authority < 0) {
      return false;
    }
    int end = url.length();
    for (char c : new char[] {'?', ';'}) {
      int i = url.indexOf(c, authority);
      end = i < 0 ? end : Math.min(end, i);
    }
    return url.substring(authority, end).indexOf('@') >= 0;
  }

  private static DatabaseException unreachable(String url, Exception e) {
    String hint = e instanceof SQLException s && "08001".equals(s.getSQLState()) && s.getMessage() != null
        && s.getMessage().startsWith("No suitable driver")
        ? "use a jdbc:postgresql:, jdbc:mariadb:, jdbc:mysql: or jdbc:h2: URL"
        : "check --jdbc-url, --user and the password (--password or " + MicOutbox.PASSWORD_ENV + ")";
    return new DatabaseException("cannot connect to " + OutboxStoreException.redact(url) + ": " + OutboxStoreException.describe(e) + "; "
        + hint, e);
  }

  JdbcOutboxStore store() {
    return store;
  }

  OutboxMaintenance maintenance() {
    return OutboxMaintenance.builder().store(store).build();
  }

  OutboxControl control() {
    return OutboxControl.builder().store(store).build();
  }

  Dialect dialect() {
    return store.dialect();
  }

  DataSource dataSource() {
    return dataSource;
  }

  DatabaseException failed(String doing, Exception e) {
    return new DatabaseException("cannot " + doing + " in table " + store.table() + " at " + OutboxStoreException.redact(url)
        + ": " + OutboxStoreException.describe(e) + "; check --table and the user's rights", e);
  }

  /** Connections from {@link DriverManager}, with a login timeout so an unreachable host fails in seconds. */
  private record DriverManagerDataSource(String url, String user, String password) implements DataSource {
    @Override
    public Connection getConnection() throws SQLException {
      Properties p = new Properties();
      if (user != null) {
        p.setProperty("user", user);
      }
      if (password != null) {
        p.setProperty("password", password);
      }
      DriverManager.setLoginTimeout(LOGIN_TIMEOUT_SECONDS);
      return DriverManager.getConnection(url, p);
    }

    @Override
    public Connection getConnection(String username, String secret) throws SQLException {
      return DriverManager.getConnection(url, username, secret);
    }

    @Override
    public PrintWriter getLogWriter() {
      return null;
    }

    @Override
    public void setLogWriter(PrintWriter out) {}

    @Override
    public void setLoginTimeout(int seconds) {}

    @Override
    public int getLoginTimeout() {
      return LOGIN_TIMEOUT_SECONDS;
    }

    @Override
    public Logger getParentLogger() throws SQLFeatureNotSupportedException {
      throw new SQLFeatureNotSupportedException("no parent logger");
    }

    @Override
    public <T> T unwrap(Class<T> type) throws SQLException {
      throw new SQLException("not a wrapper of " + type.getName());
    }

    @Override
    public boolean isWrapperFor(Class<?> type) {
      return false;
    }

    @Override
    public String toString() {
      return "DriverManagerDataSource[" + OutboxStoreException.redact(url) + "]"; // never the password
    }
  }
}
