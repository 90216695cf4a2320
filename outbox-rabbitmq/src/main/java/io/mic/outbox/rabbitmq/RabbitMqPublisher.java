package io.mic.outbox.rabbitmq;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.ConnectionFactory;
import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.MessagePublisher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.OutgoingMessage;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.SendOutcome;
import io.mic.outbox.rabbitmq.internal.ChannelPool;
import io.mic.outbox.rabbitmq.internal.RabbitErrors;
import io.mic.outbox.rabbitmq.internal.RabbitSender;
import io.mic.outbox.rabbitmq.internal.Urls;
import io.mic.outbox.spi.BrokerProbe;
import java.net.URI;
import java.net.URISyntaxException;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox events to a RabbitMQ exchange with publisher confirms; use it as the dispatcher's
 * {@code dispatchFn}.
 *
 * <pre>{@code
 * try (RabbitMqPublisher publisher = RabbitMqPublisher.builder()
 *     .uri("amqp://guest:guest@127.0.0.1:5672")
 *     .exchange("events")
 *     .build()) {
 *   OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher).build();
 *   dispatcher.dispatchOnce();
 * }
 * }</pre>
 *
 * <p>Each event becomes one persistent, {@code mandatory} message on the exchange: routing key = topic
 * (or {@link Builder#routingKey(Function)}), body = the JSON text as UTF-8, {@code content_type}
 * {@code application/json}, {@code message_id} = event id, {@code timestamp} = the event's creation time,
 * headers = the event's headers plus {@code x-event-id}, {@code x-aggregate-type} and
 * {@code x-aggregate-id}. An event counts as published only when the broker confirmed it with an ack; a
 * message returned as unroutable is followed by its ack, and it is reported as failed all the same.
 *
 * <p>{@link #dispatchBatch} publishes the batch on one channel, in batch order, with at most
 * {@link Builder#confirmWindow} messages awaiting their confirm. Failures are sorted into
 * {@link PublishUnavailableException} (no attempt counted: nack, no confirm in time, closed connection or
 * channel, missing exchange, refused permission, blocked connection) and {@link PublishRejectedException}
 * (an attempt counted: returned as unroutable, larger than the broker's {@code max_message_size}, not
 * encodable); {@code docs/rabbitmq.md} gives the reasons.
 *
 * <p>Thread-safe: each calling thread publishes on a channel of its own, taken from a small pool. A channel
 * the broker closed is dropped, and the connection is opened again on the next publication after it was
 * lost; with {@link Builder#addresses} to the first node of the list that accepts it, so a cluster survives
 * the loss of the node the publisher was connected to. {@link #close()} closes the connection.
 */
public final class RabbitMqPublisher implements BatchDispatchFn, MessagePublisher, BrokerProbe {
  public static final int DEFAULT_CONFIRM_WINDOW = 256;
  public static final int CONFIRM_WINDOW_LIMIT = 10_000;
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(10);
  /** The longest confirm timeout: a longer one cannot be counted in nanoseconds, nor usefully waited for. */
  public static final Duration CONFIRM_TIMEOUT_LIMIT = Duration.ofHours(1);
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
  public static final String DEFAULT_CONNECTION_NAME = "mic-outbox";

  private static final Logger LOG = LoggerFactory.getLogger(RabbitMqPublisher.class);

  private final RabbitSender sender;
  private final String exchange;
  private final Function<OutboxEvent, String> routingKey;

  private RabbitMqPublisher(Builder b, ConnectionFactory factory, List<Address> nodes, String displayUri) {
    this.sender = new RabbitSender(new ChannelPool(factory, nodes, displayUri, b.connectionName), b.exchange,
        b.confirmWindow, b.confirmTimeout);
    this.exchange = b.exchange;
    this.routingKey = b.routingKey;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The routing key {@code event} is published with: its topic, unless a routing key function was set. */
  public String routingKeyOf(OutboxEvent event) {
    return routingKey.apply(event);
  }

  /**
   * Publishes one event and returns once the broker confirmed it.
   *
   * @throws PublishUnavailableException RabbitMQ or the exchange is not available, or the outcome is unknown
   * @throws PublishRejectedException RabbitMQ refused this event
   */
  @Override
  public void dispatch(OutboxEvent event) throws InterruptedException {
    Exception failure = dispatchBatch(List.of(event)).get(event.id());
    if (failure != null) {
      throw (RuntimeException) failure; // always an OutboxException
    }
  }

  /**
   * Publishes the batch on one channel, in order, with a bounded window of outstanding confirms.
   *
   * @return the failure of each event that was not confirmed, by id; absent = confirmed (an ack, no return)
   * @throws PublishUnavailableException RabbitMQ is not reachable or blocks publishing: nothing was sent
   */
  @Override
  public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws InterruptedException {
    Map<UUID, Exception> failures = new LinkedHashMap<>();
    List<OutboxEvent> sendable = new ArrayList<>(events.size());
    List<OutgoingMessage> messages = new ArrayList<>(events.size());
    for (OutboxEvent event : events) {
      try {
        messages.add(messageOf(event));
        sendable.add(event);
      } catch (PublishRejectedException e) {
        failures.put(event.id(), e);
      }
    }
    if (!messages.isEmpty()) {
      failures.putAll(SendOutcome.failuresOf(sendable, sender.send(messages, false)));
    }
    if (!failures.isEmpty()) {
      LOG.debug("{} of {} events not confirmed by RabbitMQ", failures.size(), events.size());
    }
    return failures;
  }

  /** The event's message with its routing key as destination; a routing key function that fails rejects it. */
  private OutgoingMessage messageOf(OutboxEvent event) {
    String key;
    try {
      key = routingKey.apply(event);
    } catch (RuntimeException e) {
      throw RabbitErrors.refusedByClient("event " + event.id(), "the routing key function failed: " + e, e);
    }
    if (key == null) {
      throw RabbitErrors.refusedByClient("event " + event.id() + " to exchange '" + exchange + "' with routing key"
          + " 'null'", "a routing key must be 0 to 255 bytes of UTF-8", null);
    }
    OutgoingMessage m = OutboxHeaders.messageOf(event);
    return new OutgoingMessage(key, m.key(), m.headers(), m.payload(), m.deduplicationId(), m.createdAt());
  }

  /**
   * Publishes the messages on one channel, in order, as {@link #dispatchBatch} publishes events: routing key =
   * the destination, {@code message_id} = the deduplication id.
   */
  @Override
  public List<SendOutcome> send(List<OutgoingMessage> messages, boolean stopAtFirstFailure)
      throws InterruptedException {
    return sender.send(messages, stopAtFirstFailure);
  }

  /**
   * Checks that the exchange exists, e.g. before a long job starts publishing.
   *
   * @throws InvalidConfigurationException the exchange does not exist
   * @throws PublishUnavailableException RabbitMQ cannot be reached or did not answer
   */
  public void checkExchange() {
    sender.checkExchange();
  }

  /** The exchange takes every routing key: this checks that it exists ({@link #checkExchange()}). */
  @Override
  public void checkDestination(String destination) {
    sender.checkExchange();
  }

  /**
   * Checks that the client can send {@code message} at all: a routing key and {@code message_id} of at most
   * 255 bytes, header names of at most 255 bytes, and properties that fit in one frame of the connection
   * ({@code frame_max}). A message over the broker's {@code max_message_size} cannot be known in advance.
   * Connects when not connected yet.
   *
   * @throws PublishRejectedException what is wrong, never quoting the body
   * @throws PublishUnavailableException RabbitMQ cannot be reached
   */
  @Override
  public void check(OutgoingMessage message) {
    sender.check(message);
  }

  /** {@code RabbitMQ exchange <exchange> at <uri, without its password>}. */
  @Override
  public String toString() {
    return "RabbitMQ exchange " + exchange + " at " + sender.displayUri();
  }

  /**
   * Whether a publication could go now: the connection is open (opened again if it was lost, within the connect
   * timeout) and no memory or disk alarm blocks it. A dispatcher worker waiting out an outage asks it, and
   * resumes once it turns true.
   */
  @Override
  public boolean ready() {
    return sender.ready();
  }

  /** Closes the publisher's connection; publications after this fail as unavailable. */
  @Override
  public void close() {
    sender.close();
  }

  /** Options of a {@link RabbitMqPublisher}; {@link #build()} validates them. */
  public static final class Builder {
    private static final Pattern EXCHANGE = Pattern.compile("[A-Za-z0-9_.:-]{1,255}");
    private static final Pattern CONNECTION_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

    private String uri;
    private String addresses;
    private ConnectionFactory connectionFactory;
    private String exchange;
    private Function<OutboxEvent, String> routingKey = OutboxEvent::topic;
    private int confirmWindow = DEFAULT_CONFIRM_WINDOW;
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private boolean connectTimeoutSet;
    private String connectionName = DEFAULT_CONNECTION_NAME;

    private Builder() {}

    /**
     * The broker, e.g. {@code amqp://guest:guest@127.0.0.1:5672} or {@code amqps://…/vhost}; the publisher
     * opens its own connection on first use. Credentials in the URI never reach logs or messages. With
     * {@link #addresses}, its host and port give way to the listed nodes.
     */
    public Builder uri(String uri) {
      this.uri = uri;
      return this;
    }

    /**
     * The nodes of a cluster, e.g. {@code "rabbit1:5672,rabbit2:5672,rabbit3:5672"} (port optional: 5672, or
     * 5671 with TLS), in place of the host and port of {@link #uri} or the {@link #connectionFactory}, which
     * still give the credentials, virtual host and TLS. Every connection, the first and each one after a loss,
     * goes to the first node of the list that accepts it, each tried within the connect timeout; so losing
     * the node the publisher is connected to costs one reconnection to the next, not an outage.
     */
    public Builder addresses(String addresses) {
      this.addresses = addresses;
      return this;
    }

    /**
     * Connect with a copy of this factory instead (TLS, credentials providers, custom settings). The copy
     * has automatic recovery off: the publisher opens a new connection itself after one was lost.
     */
    public Builder connectionFactory(ConnectionFactory connectionFactory) {
      this.connectionFactory = connectionFactory;
      return this;
    }

    /** The exchange every event is published to (required). It must exist: the publisher never declares it. */
    public Builder exchange(String exchange) {
      this.exchange = exchange;
      return this;
    }

    /** The routing key of each event (default: its topic); at most 255 bytes of UTF-8. */
    public Builder routingKey(Function<OutboxEvent, String> routingKey) {
      this.routingKey = routingKey;
      return this;
    }

    /** At most this many messages of a batch wait for their confirm at once (default 256). */
    public Builder confirmWindow(int confirmWindow) {
      this.confirmWindow = confirmWindow;
      return this;
    }

    /** How long to wait for each confirm (default 10 s); after that the outcome is unknown: unavailable. */
    public Builder confirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
      return this;
    }

    /**
     * How long opening a connection from {@link #uri} may take (default 2 s): the TCP connection, then the
     * AMQP handshake, each. Refused beside {@link #connectionFactory}, whose own timeouts apply.
     */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
      this.connectTimeoutSet = true;
      return this;
    }

    /** Name of the publisher's connection, as the management UI shows it (default {@code mic-outbox}). */
    public Builder connectionName(String connectionName) {
      this.connectionName = connectionName;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong and how to fix it */
    public RabbitMqPublisher build() {
      require(uri != null ^ connectionFactory != null, uri == null
          ? "uri or connectionFactory is required: .uri(\"amqp://guest:guest@127.0.0.1:5672\") or"
              + " .connectionFactory(factory)"
          : "set either uri or connectionFactory, not both: the publisher would not know which one to use");
      require(exchange != null, "exchange is required: .exchange(\"events\"), an exchange that exists");
      require(EXCHANGE.matcher(exchange).matches(), "exchange must be 1 to 255 letters, digits, '_', '.', ':'"
          + " or '-', was '" + exchange + "'");
      require(routingKey != null, "routingKey must not be null: omit it to route by topic");
      require(confirmWindow >= 1 && confirmWindow <= CONFIRM_WINDOW_LIMIT,
          "confirmWindow must be between 1 and " + CONFIRM_WINDOW_LIMIT + ", was " + confirmWindow);
      require(positive(confirmTimeout), "confirmTimeout must be > 0, was " + confirmTimeout);
      require(confirmTimeout.compareTo(CONFIRM_TIMEOUT_LIMIT) <= 0,
          "confirmTimeout must be > 0 and at most " + CONFIRM_TIMEOUT_LIMIT + ", was " + confirmTimeout);
      require(positive(connectTimeout), "connectTimeout must be > 0, was " + connectTimeout);
      require(connectionName != null && CONNECTION_NAME.matcher(connectionName).matches(),
          "connectionName must be 1 to 64 letters, digits, '_', '.' or '-', was '" + connectionName + "'");
      if (connectionFactory != null) {
        require(!connectTimeoutSet, "connectTimeout applies to a connection from uri; with connectionFactory, set"
            + " the factory's own timeouts (setConnectionTimeout, setHandshakeTimeout) instead");
        ConnectionFactory copy = connectionFactory.clone();
        return publisherOn(copy, displayOf(copy));
      }
      ConnectionFactory factory = new ConnectionFactory();
      try {
        if (new URI(uri).getRawAuthority() != null && new URI(uri).getHost() == null) {
          // e.g. a port that is not a number: the client would fall back to localhost:5672 as guest
          throw new URISyntaxException(uri, "no host");
        }
        factory.setUri(uri);
      } catch (URISyntaxException | GeneralSecurityException | IllegalArgumentException e) {
        // the client's message quotes the URI, and with it a password: name the option only
        throw new InvalidConfigurationException("uri '" + Urls.redact(uri) + "' is not an AMQP URI: use e.g."
            + " amqp://guest:guest@127.0.0.1:5672 or amqps://user:password@host:5671/vhost");
      }
      int connectMillis = Math.toIntExact(Math.min(Integer.MAX_VALUE, connectTimeout.toMillis()));
      factory.setConnectionTimeout(connectMillis);
      // also for a socket that accepts but never speaks AMQP (a load balancer with no broker behind it)
      factory.setHandshakeTimeout(connectMillis);
      return publisherOn(factory, Urls.redact(uri));
    }

    private RabbitMqPublisher publisherOn(ConnectionFactory factory, String displayUri) {
      if (addresses == null) {
        return new RabbitMqPublisher(this, factory, null, displayUri);
      }
      List<Address> nodes = NodeAddresses.parse(addresses, factory.isSSL());
      return new RabbitMqPublisher(this, factory, nodes, NodeAddresses.display(factory, nodes));
    }

    private static String displayOf(ConnectionFactory f) {
      return (f.isSSL() ? "amqps://" : "amqp://") + f.getHost() + ":" + f.getPort() + "/"
          + Objects.requireNonNullElse(f.getVirtualHost(), "/").replace("/", "%2F");
    }

    private static boolean positive(Duration d) {
      return d != null && !d.isNegative() && !d.isZero();
    }

    private static void require(boolean condition, String message) {
      if (!condition) {
        throw new InvalidConfigurationException(message);
      }
    }
  }
}
