package io.mic.outbox.nats.internal;

import io.mic.outbox.PublishUnavailableException;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamOptions;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.io.IOException;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection a publisher uses: either one the application owns (never closed here) or one this class
 * opens on first use and again after it was closed. Connecting lazily lets a dispatcher start while NATS
 * is down: each publication then fails as unavailable, without burning attempts, until NATS is back.
 */
public final class ConnectionSource implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionSource.class);

  private final Options options;
  private final String displayUrl;
  private final JetStreamOptions jetStreamOptions;
  private Connection connection;
  private JetStream jetStream;
  private boolean closed;

  private ConnectionSource(Connection given, Options options, String displayUrl, Duration ackTimeout) {
    this.connection = given;
    this.options = options;
    this.displayUrl = displayUrl;
    this.jetStreamOptions = JetStreamOptions.builder().requestTimeout(ackTimeout).build();
  }

  /** Uses the application's connection; {@link #close()} leaves it open. */
  public static ConnectionSource of(Connection connection, Duration ackTimeout) {
    return new ConnectionSource(connection, null, null, ackTimeout);
  }

  /** Opens its own connection to {@code url} on first use; {@link #close()} closes it. */
  public static ConnectionSource connectingTo(String url, String connectionName, Duration connectTimeout,
      Duration ackTimeout) {
    Options options = Options.builder()
        .server(url)
        .connectionName(connectionName)
        .connectionTimeout(connectTimeout)
        .maxReconnects(-1) // an outage delays events, it must not end the publisher
        .errorListener(new Slf4jErrorListener())
        .build();
    return new ConnectionSource(null, options, Urls.redact(url), ackTimeout);
  }

  /** The JetStream context, connecting first if this source owns the connection. */
  public synchronized JetStream jetStream() throws InterruptedException {
    if (closed) {
      throw new PublishUnavailableException("the publisher is closed");
    }
    if (options == null) {
      if (connection.getStatus() == Connection.Status.CLOSED) {
        throw new PublishUnavailableException("the NATS connection given to the publisher is closed");
      }
    } else if (connection == null || connection.getStatus() == Connection.Status.CLOSED) {
      jetStream = null;
      connection = connect();
    }
    if (jetStream == null) {
      try {
        jetStream = connection.jetStream(jetStreamOptions);
      } catch (IOException e) {
        throw new PublishUnavailableException("JetStream is not available: " + e.getMessage(), e);
      }
    }
    return jetStream;
  }

  /** {@code true} unless the connection is known to be down: then a batch stops sending. */
  public synchronized boolean looksConnected() {
    return connection != null && connection.getStatus() == Connection.Status.CONNECTED;
  }

  private Connection connect() throws InterruptedException {
    try {
      Connection c = Nats.connect(options);
      LOG.info("connected to NATS at {}", displayUrl);
      return c;
    } catch (IOException e) {
      // the client's message and exception quote the URL with its password: report the root cause only
      Throwable root = e;
      while (root.getCause() != null && root.getCause() != root) {
        root = root.getCause();
      }
      String reason = root == e ? "no server answered" : root.toString();
      throw new PublishUnavailableException("cannot connect to NATS at " + displayUrl + " (" + reason
          + "); events wait without counting attempts until it is reachable", root == e ? null : root);
    }
  }

  @Override
  public synchronized void close() {
    closed = true;
    if (options != null && connection != null) {
      try {
        connection.close();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt(); // the connection is closing anyway; let the caller see the interrupt
      }
      connection = null;
    }
  }
}
