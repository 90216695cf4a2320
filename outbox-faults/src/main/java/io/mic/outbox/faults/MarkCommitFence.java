package io.mic.outbox.faults;

import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.logging.Logger;
import javax.sql.DataSource;

/**
 * A data source whose connections reach {@link FaultPoint#DURING_MARK} in {@code commit()} while the
 * calling thread runs a mark: the mark's UPDATE is done and its row locks are held, the commit is not
 * sent. It needs a pool with auto-commit off, so the store commits the mark itself.
 */
final class MarkCommitFence implements DataSource {
  static final ThreadLocal<Boolean> MARKING = ThreadLocal.withInitial(() -> false);

  private final DataSource delegate;

  MarkCommitFence(DataSource delegate) {
    this.delegate = delegate;
  }

  private static Connection fenced(Connection c) {
    return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(), new Class<?>[] {Connection.class},
        (proxy, method, args) -> {
          if (method.getName().equals("commit") && MARKING.get()) {
            FaultPoint.DURING_MARK.reach();
          }
          try {
            return method.invoke(c, args);
          } catch (InvocationTargetException e) {
            throw e.getCause();
          }
        });
  }

  @Override
  public Connection getConnection() throws SQLException {
    return fenced(delegate.getConnection());
  }

  @Override
  public Connection getConnection(String username, String password) throws SQLException {
    return fenced(delegate.getConnection(username, password));
  }

  @Override
  public PrintWriter getLogWriter() throws SQLException {
    return delegate.getLogWriter();
  }

  @Override
  public void setLogWriter(PrintWriter out) throws SQLException {
    delegate.setLogWriter(out);
  }

  @Override
  public void setLoginTimeout(int seconds) throws SQLException {
    delegate.setLoginTimeout(seconds);
  }

  @Override
  public int getLoginTimeout() throws SQLException {
    return delegate.getLoginTimeout();
  }

  @Override
  public Logger getParentLogger() throws SQLFeatureNotSupportedException {
    return delegate.getParentLogger();
  }

  @Override
  public <T> T unwrap(Class<T> iface) throws SQLException {
    return delegate.unwrap(iface);
  }

  @Override
  public boolean isWrapperFor(Class<?> iface) throws SQLException {
    return delegate.isWrapperFor(iface);
  }
}
