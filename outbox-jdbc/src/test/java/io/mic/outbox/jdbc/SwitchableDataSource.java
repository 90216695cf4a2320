package io.mic.outbox.jdbc;

import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.logging.Logger;
import javax.sql.DataSource;

/** A DataSource whose target can be switched: a database that is down now and up later. */
final class SwitchableDataSource implements DataSource {
  private final AtomicReference<DataSource> target;

  SwitchableDataSource(DataSource initial) {
    this.target = new AtomicReference<>(initial);
  }

  void switchTo(DataSource next) {
    target.set(next);
  }

  @Override public Connection getConnection() throws SQLException {
    return target.get().getConnection();
  }

  @Override public Connection getConnection(String user, String password) throws SQLException {
    return target.get().getConnection(user, password);
  }

  @Override public PrintWriter getLogWriter() throws SQLException {
    return target.get().getLogWriter();
  }

  @Override public void setLogWriter(PrintWriter out) throws SQLException {
    target.get().setLogWriter(out);
  }

  @Override public void setLoginTimeout(int seconds) throws SQLException {
    target.get().setLoginTimeout(seconds);
  }

  @Override public int getLoginTimeout() throws SQLException {
    return target.get().getLoginTimeout();
  }

  @Override public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return target.get().getParentLogger();
  }

  @Override public <T> T unwrap(Class<T> iface) throws SQLException {
    return target.get().unwrap(iface);
  }

  @Override public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return target.get().isWrapperFor(iface);
  }
}
