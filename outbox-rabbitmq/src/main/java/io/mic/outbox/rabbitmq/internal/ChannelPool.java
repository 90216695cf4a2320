package io.mic.outbox.rabbitmq.internal;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.BlockedListener;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ShutdownSignalException;
import io.mic.outbox.PublishUnavailableException;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The publisher's connection and its idle confirm channels. Each publishing thread borrows a channel for
 * one batch and gives it back; a channel that was closed, timed out or still awaits confirms is dropped,
 * never reused, so one bad channel cannot poison a later batch.
 *
 * <p>The connection is opened on first use and opened again on the next borrow after it was lost (broker
 * restart, network failure), to the first of the cluster's nodes that accepts it when the pool has a list. The client's automatic recovery stays off: a recovered channel restarts its
 * publish sequence numbers, and confirms could no longer be matched to messages.
 */
public final class ChannelPool implements AutoCloseable {
  /** Idle channels kept for reuse; more concurrent publishers open and close their own. */
  static final int MAX_IDLE = 16;

  private static final Logger LOG = LoggerFactory.getLogger(ChannelPool.class);

  private final ConnectionFactory factory;
  /** The nodes to try in order, or {@code null}: the factory's own host and port. */
  private final List<Address> nodes;
  private final String displayUri;
  private final String connectionName;
  private final Deque<ConfirmChannel> idle = new ArrayDeque<>(); // guarded by this
  private Connection connection; // guarded by this
  private boolean closed; // guarded by this
  private volatile String blockedReason;
  /**
   * Closes discarded channels off the publishing thread: closing waits for the broker's close-ok, which a
   * blocked connection never sends.
   */
  private final ExecutorService closer = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "mic-outbox-rabbitmq-closer");
    t.setDaemon(true);
    return t;
  });

  /**
   * {@code factory} must be private to this pool: automatic recovery is switched off on it. {@code nodes}, when
   * not {@code null}, replace its host and port: each connection goes to the first of them that accepts it.
   */
  public ChannelPool(ConnectionFactory factory, List<Address> nodes, String displayUri, String connectionName) {
    this.factory = factory;
    this.nodes = nodes == null ? null : List.copyOf(nodes);
    this.displayUri = displayUri;
    this.connectionName = connectionName;
    factory.setAutomaticRecoveryEnabled(false);
    factory.setTopologyRecoveryEnabled(false);
  }

  public String displayUri() {
    return displayUri;
  }

  /** The reason the broker gave for blocking publishers (memory or disk alarm), or {@code null}. */
  public String blockedReason() {
    return blockedReason;
  }

  /**
   * Whether a publication could go now: the connection is open (opened first if it was lost) and not blocked
   * by an alarm.
   */
  public boolean ready() {
    try {
      open();
    } catch (PublishUnavailableException e) {
      return false;
    }
    return blockedReason == null;
  }

  private synchronized Connection open() {
    if (closed) {
      throw new PublishUnavailableException("the publisher is closed");
    }
    if (connection == null || !connection.isOpen()) {
      idle.clear(); // closed with their connection
      connection = connect();
    }
    return connection;
  }

  /** An open channel in confirm mode, exclusively the caller's until {@link #giveBack}. */
  public ConfirmChannel borrow() {
    Connection c;
    synchronized (this) {
      c = open();
      while (!idle.isEmpty()) {
        ConfirmChannel ch = idle.pop();
        if (ch.connection() == c && ch.reusable()) {
          return ch;
        }
        discard(ch);
      }
    }
    try {
      return ConfirmChannel.open(c);
    } catch (IOException | ShutdownSignalException e) {
      throw new PublishUnavailableException("cannot open a channel to RabbitMQ at " + displayUri + ": "
          + e.getMessage(), e);
    }
  }

  public void giveBack(ConfirmChannel ch) {
    synchronized (this) {
      if (!closed && ch.connection() == connection && ch.reusable() && idle.size() < MAX_IDLE) {
        idle.push(ch);
        return;
      }
    }
    discard(ch);
  }

  private void discard(ConfirmChannel ch) {
    if (ch.closedBy() != null) {
      return; // the broker or the connection closed it already
    }
    try {
      closer.execute(ch::abort);
    } catch (RejectedExecutionException e) {
      // the pool is closing: the channel goes with the connection
    }
  }

  private Connection connect() {
    try {
      // without automatic recovery the client tries a list in its order, unshuffled
      Connection c = nodes == null ? factory.newConnection(connectionName)
          : factory.newConnection(nodes, connectionName);
      c.addBlockedListener(new BlockedListener() {
        @Override
        public void handleBlocked(String reason) {
          blockedReason = reason == null ? "no reason given" : reason;
          LOG.warn("RabbitMQ at {} blocked publishing ({}): events wait without counting attempts until the"
              + " broker's memory or disk alarm clears", displayUri, blockedReason);
        }

        @Override
        public void handleUnblocked() {
          blockedReason = null;
          LOG.info("RabbitMQ at {} unblocked publishing", displayUri);
        }
      });
      c.addShutdownListener(cause -> {
        blockedReason = null;
        if (!cause.isInitiatedByApplication()) {
          LOG.warn("lost the connection to RabbitMQ at {} ({}); it is opened again on the next publication",
              displayUri, RabbitErrors.replyText(cause));
        }
      });
      if (nodes == null) {
        LOG.info("connected to RabbitMQ at {}", displayUri);
      } else {
        LOG.info("connected to RabbitMQ at {}, node {}:{}", displayUri, c.getAddress().getHostAddress(), c.getPort());
      }
      return c;
    } catch (IOException | TimeoutException e) {
      // report the root cause only: the client's messages never quote the password, but stay on the safe side
      Throwable root = e;
      while (root.getCause() != null && root.getCause() != root) {
        root = root.getCause();
      }
      throw new PublishUnavailableException("cannot connect to RabbitMQ at " + displayUri + " (" + root
          + "); events wait without counting attempts until it is reachable", root);
    }
  }

  @Override
  public void close() {
    Connection c;
    synchronized (this) {
      closed = true;
      // the pooled channels close with the connection below: closing one by one waits for the broker's
      // close-ok, without a limit, and a connection blocked by an alarm is not read, so it never comes
      idle.clear();
      c = connection;
      connection = null;
    }
    closer.shutdown();
    if (c != null && c.isOpen()) {
      try {
        c.close(2_000);
      } catch (IOException | RuntimeException e) {
        c.abort(1_000);
      }
    }
    closer.shutdownNow();
  }
}
