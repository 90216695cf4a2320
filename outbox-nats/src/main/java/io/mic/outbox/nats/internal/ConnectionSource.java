package io.mic.outbox.nats.internal;

import io.mic.outbox.PublishUnavailableException;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamOptions;
import io.nats.client.Nats;
import io.nats.client.Options;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection a publisher uses: either one the application owns (never closed here) or one this class
 * opens on first use and again after it was closed or found dead. When the application's connection closes
 * for good (it gave up reconnecting during an outage), this class opens its own with the same options and
 * owns it from then on: otherwise nothing would be published until the application restarted. Connecting
 * lazily lets a dispatcher start while NATS is down: each publication then fails as unavailable, without
 * burning attempts, until NATS is back.
 *
 * <p>A client can report {@code CONNECTED} and still send nothing (after a server restart, the client's
 * writer may stay on its reconnect queue: every PubAck then times out, for good). {@link #recover} probes
 * such a connection and replaces it when it does not answer.
 */
public final class ConnectionSource implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ConnectionSource.class);
  /** Between two reconnection attempts to a server that is down: one refused TCP connect each. */
  static final Duration RECONNECT_WAIT = Duration.ofMillis(250);

  /** How this class opens its own connection; null while it uses the application's. */
  private volatile Options options;
  private final String displayUrl;
  private final JetStreamOptions jetStreamOptions;
  private final Object probeLock = new Object();
  private Connection connection;
  private JetStream jetStream;
  private boolean closed;

  /** The connection and JetStream context one publication call uses. */
  public record Session(Connection connection, JetStream jetStream) {}

  private ConnectionSource(Connection given, Options options, String displayUrl, Duration ackTimeout) {
    this.connection = given;
    this.options = options;
    this.displayUrl = displayUrl;
    this.jetStreamOptions = JetStreamOptions.builder().requestTimeout(ackTimeout).build();
  }

  /** Uses the application's connection; {@link #close()} leaves it open. */
  public static ConnectionSource of(Connection connection, Duration ackTimeout) {
    Options given = connection.getOptions(); // null from a test double
    if (given != null && given.forceFlushOnRequest()) {
      LOG.info("the application's NATS connection ends a write after every request (the client's default):"
          + " a batch goes out one or two messages per write, at about twice the CPU per message; build it with"
          + " Options.Builder.dontForceFlushOnRequest() to let a batch share writes");
    }
    return new ConnectionSource(connection, null, "the application's connection", ackTimeout);
  }

  /** Opens its own connection to {@code url} on first use; {@link #close()} closes it. */
  public static ConnectionSource connectingTo(String url, String connectionName, Duration connectTimeout,
      Duration ackTimeout) {
    Options options = options(url, connectionName, connectTimeout)
        .maxReconnects(-1) // an outage delays events, it must not end the publisher
        .reconnectWait(RECONNECT_WAIT) // the client's 2 s would hold events that long after the server is back
        .errorListener(new Slf4jErrorListener())
        .build();
    return new ConnectionSource(null, options, Urls.redact(url), ackTimeout);
  }

  /**
   * Without {@code dontForceFlushOnRequest} the client ends a write after every request, and a JetStream
   * publication is one: a batch then goes out one or two messages per write, and NATS reads it in as many
   * pieces, at about twice the CPU per message on both sides. Without the flag, the client's writer sends
   * whatever is queued when it runs; it never waits for more, so a lone request is not delayed.
   */
  private static Options.Builder options(String url, String connectionName, Duration connectTimeout) {
    return Options.builder().server(url).connectionName(connectionName).connectionTimeout(connectTimeout)
        .dontForceFlushOnRequest();
  }

  /** The connection and JetStream context to publish with, connecting first if this source owns the connection. */
  public synchronized Session session() throws InterruptedException {
    if (closed) {
      throw new PublishUnavailableException("the publisher is closed");
    }
    if (options == null && connection.getStatus() == Connection.Status.CLOSED) {
      takeOverClosed();
    }
    if (options != null && (connection == null || connection.getStatus() == Connection.Status.CLOSED)) {
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
    return new Session(connection, jetStream);
  }

  /**
   * Whether a publication could go now: the connection says {@code CONNECTED} (an owned one is opened first
   * if there is none) and answers a PING and a JetStream request within {@code timeout}.
   *
   * @param openIfNeeded {@code false}: an owned connection not opened yet counts as ready, since a publication
   *     opens it when it needs it
   */
  public boolean ready(Duration timeout, boolean openIfNeeded) throws InterruptedException {
    Connection c;
    synchronized (this) {
      if (closed) {
        return false;
      }
      if (!openIfNeeded && options != null && connection == null) {
        return true;
      }
    }
    try {
      c = session().connection();
    } catch (PublishUnavailableException e) {
      return false;
    }
    if (c.getStatus() != Connection.Status.CONNECTED) {
      return false;
    }
    try {
      c.flush(timeout);
      c.jetStreamManagement(JetStreamOptions.builder().requestTimeout(timeout).build()).getAccountStatistics();
      return true;
    } catch (TimeoutException | IOException | JetStreamApiException | RuntimeException e) {
      return false; // no PONG, no JetStream answer (a refusal included): not yet
    }
  }

  /** Where this source connects to, without credentials. */
  public String displayUrl() {
    return displayUrl;
  }

  /**
   * Called after a publication in which no PubAck arrived and some timed out. When the client says
   * {@code CONNECTED}, asks the server for a PONG within {@code probeTimeout}; without one the connection is
   * dead although it looks alive: an owned connection is closed and the next {@link #session()} opens a new
   * one, a given one is told to reconnect. A client that knows it is disconnected is left to its own
   * reconnection. A PONG is enough: a connection that carries it carries requests, and a JetStream that does
   * not answer them (a cluster without quorum, no meta leader) is not cured by another connection, whose
   * opening only holds the worker back once the cluster answers again.
   *
   * @return {@code true} when the connection was replaced or told to reconnect
   */
  public boolean recover(Session suspect, Duration probeTimeout) throws InterruptedException {
    synchronized (probeLock) {
      synchronized (this) {
        if (closed || suspect.connection() != connection) {
          return false; // closed, or another call replaced it already
        }
      }
      Connection c = suspect.connection();
      if (c.getStatus() != Connection.Status.CONNECTED) {
        return false;
      }
      String silence = probe(c, probeTimeout);
      if (silence == null) {
        return false; // it answers: JetStream itself is slow, or the subject's stream or the cluster is not answering
      }
      LOG.warn("the NATS connection ({}) says CONNECTED but {} within {} after PubAcks timed out: {}",
          displayUrl, silence, probeTimeout, options != null ? "replacing it" : "forcing it to reconnect");
      synchronized (this) {
        if (options != null) {
          connection = null;
          jetStream = null;
        }
      }
      Thread discard = new Thread(() -> discard(c), "mic-outbox-nats-recover"); // closing may wait on the dead writer
      discard.setDaemon(true);
      discard.start();
      return true;
    }
  }

  /** {@code null} when the connection answers, else what it failed to answer. */
  private static String probe(Connection c, Duration timeout) throws InterruptedException {
    try {
      c.flush(timeout);
      return null;
    } catch (TimeoutException e) {
      return "answered no PING";
    } catch (IllegalStateException e) {
      return null; // it knows it is not connected: its own reconnection handles it
    }
  }

  private void discard(Connection c) {
    try {
      if (options != null) {
        c.close();
      } else {
        c.forceReconnect();
      }
    } catch (IOException | RuntimeException e) {
      LOG.debug("closing a dead NATS connection failed: {}", e.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The application's connection closed for good: from now on this class opens and owns its own. */
  private void takeOverClosed() {
    Options given = connection.getOptions(); // null from a test double
    if (given == null) {
      throw new PublishUnavailableException("the NATS connection given to the publisher is closed");
    }
    LOG.warn("the application's NATS connection closed for good (it gives up after {} reconnects; build it with"
        + " Options.Builder.maxReconnects(-1) to reconnect forever): the publisher opens a connection of its own"
        + " with the same options and closes it when it closes", given.getMaxReconnect());
    options = given;
    jetStream = null;
  }

  private Connection connect() throws InterruptedException {
    try {
      Connection c = Nats.connect(options);
      LOG.info("connected to NATS at {}", displayUrl);
      return c;
    } catch (IOException e) {
      Throwable root = NatsErrors.rootOfConnectFailure(e);
      throw new PublishUnavailableException("cannot connect to NATS at " + displayUrl + " ("
          + NatsErrors.connectFailure(e) + "); events wait without counting attempts until it is reachable", root);
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
