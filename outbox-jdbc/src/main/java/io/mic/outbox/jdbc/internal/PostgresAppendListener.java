package io.mic.outbox.jdbc.internal;

import io.mic.outbox.OutboxStore;
import io.mic.outbox.Backoff;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Objects;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Listens on one PostgreSQL notification channel over a connection of its own, taken from the store's
 * {@link DataSource} and held until {@link #close()}, and runs {@code wakeUp} whenever notifications
 * arrive. It runs one daemon thread. When the connection fails (server restart, {@code
 * pg_terminate_backend}, network), it reconnects with a backoff from {@link #RECONNECT_INITIAL} up to
 * {@link #RECONNECT_MAX}; meanwhile the dispatcher polls as usual, and after each (re)connection it runs
 * {@code wakeUp} once, since notifications sent while nobody listened are lost.
 *
 * <p>A connection that stayed silent for {@link #CHECK_AFTER} is asked a round trip, which must come back within
 * {@link #ANSWER_TIMEOUT} (the connection's network timeout, which bounds every call on it): a partition or a
 * frozen server sends no error, only silence, so a listener that does not answer is replaced, with a WARN.
 *
 * <p>The PgJDBC classes are loaded only when a store on PostgreSQL asks for this class, so the driver stays
 * an optional dependency of {@code outbox-jdbc}.
 */
public final class PostgresAppendListener implements OutboxStore.Subscription {
  public static final Duration RECONNECT_INITIAL = Duration.ofMillis(200);
  public static final Duration RECONNECT_MAX = Duration.ofSeconds(10);
  /** How long one wait for notifications lasts; bounds how long {@link #close()} waits for the thread. */
  static final int WAIT_MILLIS = 250;
  /** A connection that stayed silent this long is checked with a round trip (a dead peer sends nothing). */
  static final Duration CHECK_AFTER = Duration.ofSeconds(5);
  /** How long any call on the listening connection may wait for the server's answer. */
  static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(5);

  private static final Logger LOG = LoggerFactory.getLogger(PostgresAppendListener.class);

  private final DataSource dataSource;
  private final AppendChannel channel;
  private final Runnable wakeUp;
  private final Backoff backoff = new Backoff(RECONNECT_INITIAL, RECONNECT_MAX);
  private final Object lock = new Object();
  private final Thread thread;
  private volatile boolean closed;
  private volatile int connections;

  private PostgresAppendListener(DataSource dataSource, AppendChannel channel, Runnable wakeUp) {
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.channel = Objects.requireNonNull(channel, "channel");
    this.wakeUp = Objects.requireNonNull(wakeUp, "wakeUp");
    this.thread = new Thread(this::run, "mic-outbox-listen-" + channel);
    thread.setDaemon(true);
  }

  /** Starts listening on {@code channel} in the background; returns at once. */
  public static PostgresAppendListener start(DataSource dataSource, AppendChannel channel, Runnable wakeUp) {
    PostgresAppendListener listener = new PostgresAppendListener(dataSource, channel, wakeUp);
    listener.thread.start();
    return listener;
  }

  /** How many times a connection was set up and listened on; for tests and diagnostics. */
  public int connections() {
    return connections;
  }

  @Override
  public void close() {
    closed = true;
    synchronized (lock) {
      lock.notifyAll();
    }
    if (Thread.currentThread() != thread) {
      try {
        thread.join(WAIT_MILLIS * 4L);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void run() {
    int failures = 0;
    while (!closed) {
      try {
        listen();
        failures = 0;
      } catch (SQLException | RuntimeException | LinkageError e) {
        if (closed) {
          break;
        }
        failures++;
        Duration delay = backoff.delay(failures);
        if (failures == 1) {
          LOG.warn("listening on channel {} failed; dispatchers poll meanwhile, reconnecting in {}: {}", channel,
              delay, Causes.describe(e));
        } else {
          LOG.debug("listening on channel {} failed again ({} times); next try in {}", channel, failures, delay, e);
        }
        pause(delay);
      }
    }
  }

  /** One connection's life: LISTEN, then wait for notifications until closed or the connection fails. */
  private void listen() throws SQLException {
    try (Connection c = dataSource.getConnection()) {
      int networkTimeout = c.getNetworkTimeout();
      c.setNetworkTimeout(Runnable::run, (int) ANSWER_TIMEOUT.toMillis());
      try {
        listen(c);
      } finally {
        // The connection goes back to a pool: it must not keep collecting notifications. On a dead connection
        // this fails at once, through the pool's proxy, which then discards the connection.
        unlisten(c, networkTimeout);
      }
    }
  }

  private void listen(Connection c) throws SQLException {
    if (!c.getAutoCommit()) {
      c.setAutoCommit(true); // notifications are delivered between transactions only
    }
    PGConnection pg = c.unwrap(PGConnection.class);
    try (Statement s = c.createStatement()) {
      s.execute(channel.listen());
    }
    connections++;
    LOG.info("listening for appends on channel {} (connection {})", channel, connections);
    wakeUp.run(); // whatever was committed while nobody listened
    long quietSince = System.nanoTime();
    while (!closed) {
      PGNotification[] received = pg.getNotifications(WAIT_MILLIS);
      if (received != null && received.length > 0) {
        wakeUp.run();
        quietSince = System.nanoTime();
      } else if (System.nanoTime() - quietSince > CHECK_AFTER.toNanos()) {
        check(c);
        quietSince = System.nanoTime();
      }
    }
  }

  /** A round trip: throws if the peer is gone, or says nothing within {@link #ANSWER_TIMEOUT}. */
  private void check(Connection c) throws SQLException {
    long asked = System.nanoTime();
    try (Statement s = c.createStatement()) {
      s.execute("SELECT 1");
    } catch (SQLException e) {
      if (System.nanoTime() - asked >= ANSWER_TIMEOUT.toNanos() * 9 / 10) {
        throw new SQLException("the connection listening on channel " + channel + " did not answer a check within "
            + ANSWER_TIMEOUT + " (a network partition or a frozen server); replacing it", e);
      }
      throw e;
    }
  }

  private void unlisten(Connection c, int networkTimeout) {
    try (Statement s = c.createStatement()) {
      s.execute("UNLISTEN *");
      c.setNetworkTimeout(Runnable::run, networkTimeout);
    } catch (SQLException e) {
      LOG.debug("UNLISTEN on channel {} failed; the connection is probably gone", channel, e);
    }
  }

  private void pause(Duration delay) {
    long until = System.nanoTime() + delay.toNanos();
    synchronized (lock) {
      for (long left = delay.toMillis(); !closed && left > 0;
          left = (until - System.nanoTime()) / 1_000_000) {
        try {
          lock.wait(left);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          return;
        }
      }
    }
  }
}
