package io.mic.outbox.rabbitmq;

import io.mic.outbox.PublishRejectedException;
import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ConnectionFactory;
import com.rabbitmq.client.ShutdownSignalException;
import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.rabbitmq.internal.ChannelPool;
import io.mic.outbox.rabbitmq.internal.ConfirmChannel;
import io.mic.outbox.rabbitmq.internal.ConfirmChannel.Pending;
import io.mic.outbox.rabbitmq.internal.RabbitErrors;
import io.mic.outbox.rabbitmq.internal.Urls;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Function;
import java.util.function.Supplier;
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
 * lost. {@link #close()} closes the connection.
 */
public final class RabbitMqPublisher implements BatchDispatchFn, AutoCloseable {
  public static final int DEFAULT_CONFIRM_WINDOW = 256;
  public static final int CONFIRM_WINDOW_LIMIT = 10_000;
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = Duration.ofSeconds(10);
  /** The longest confirm timeout: a longer one cannot be counted in nanoseconds, nor usefully waited for. */
  public static final Duration CONFIRM_TIMEOUT_LIMIT = Duration.ofHours(1);
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
  public static final String DEFAULT_CONNECTION_NAME = "mic-outbox";
  public static final String CONTENT_TYPE = "application/json";
  /** Delivery mode 2: the broker writes the message to disk in durable queues. */
  public static final int PERSISTENT = 2;


  private static final Logger LOG = LoggerFactory.getLogger(RabbitMqPublisher.class);
  private static final int MAX_SHORT_STRING = 255;

  private final ChannelPool channels;
  private final String exchange;
  private final Function<OutboxEvent, String> routingKey;
  private final int confirmWindow;
  private final Duration confirmTimeout;

  private RabbitMqPublisher(Builder b, ConnectionFactory factory, String displayUri) {
    this.channels = new ChannelPool(factory, displayUri, b.connectionName);
    this.exchange = b.exchange;
    this.routingKey = b.routingKey;
    this.confirmWindow = b.confirmWindow;
    this.confirmTimeout = b.confirmTimeout;
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
    String blocked = channels.blockedReason();
    if (blocked != null && !events.isEmpty()) {
      throw RabbitErrors.blocked("the batch of " + events.size() + " events", blocked);
    }
    List<OutboxEvent> todo = events;
    boolean first = true;
    while (!todo.isEmpty()) {
      ConfirmChannel channel;
      try {
        channel = channels.borrow();
      } catch (PublishUnavailableException e) {
        if (first) {
          throw e;
        }
        todo.forEach(ev -> failures.put(ev.id(), e));
        break;
      }
      first = false;
      try {
        todo = publishRound(channel, todo, failures);
      } finally {
        channels.giveBack(channel);
      }
    }
    if (!failures.isEmpty()) {
      LOG.debug("{} of {} events not confirmed by RabbitMQ", failures.size(), events.size());
    }
    return failures;
  }

  /**
   * Publishes {@code todo} on {@code channel} and records each failure.
   *
   * @return the events to publish again on a fresh channel: the broker closed this one because of one
   *     message (now rejected), and the others it held, or that were not sent yet, are not at fault
   */
  private List<OutboxEvent> publishRound(ConfirmChannel channel, List<OutboxEvent> todo,
      Map<UUID, Exception> failures) throws InterruptedException {
    List<Pending<OutboxEvent>> sent = new ArrayList<>(todo.size());
    ArrayDeque<Pending<OutboxEvent>> window = new ArrayDeque<>();
    int next = 0;
    String blocked = null;
    for (; next < todo.size(); next++) {
      OutboxEvent event = todo.get(next);
      while (window.size() >= confirmWindow) {
        window.poll().await();
      }
      if (channel.closedBy() != null) {
        break;
      }
      blocked = channels.blockedReason();
      if (blocked != null) {
        break;
      }
      String key;
      try {
        key = checkedRoutingKey(event);
      } catch (PublishRejectedException e) {
        failures.put(event.id(), e);
        continue;
      }
      try {
        Pending<OutboxEvent> p = channel.publish(exchange, key, propertiesOf(event), bodyOf(event), event,
            confirmTimeout.toNanos());
        sent.add(p);
        window.add(p);
      } catch (ShutdownSignalException | IOException e) {
        break; // the channel is closing: this event and the rest were not sent
      } catch (RuntimeException e) {
        // the client failed mid-write: its sequence numbers may no longer match the broker's
        channel.spoil();
        failures.put(event.id(), RabbitErrors.refusedByClient(describe(event, key), e.toString(), e));
        next++;
        break;
      }
    }
    List<OutboxEvent> unsent = todo.subList(next, todo.size());
    List<Pending<OutboxEvent>> lost = new ArrayList<>();
    ShutdownSignalException lostTo = null;
    for (Pending<OutboxEvent> p : sent) {
      ConfirmChannel.Outcome outcome = p.await();
      OutboxEvent event = p.item();
      if (outcome instanceof ConfirmChannel.Closed closed) {
        lost.add(p);
        lostTo = closed.cause();
        continue;
      }
      OutboxException failure = failureOf(outcome, channel, () -> describe(event, keyOf(event)));
      if (failure != null) {
        failures.put(event.id(), failure);
      }
    }
    if (blocked != null) {
      // a blocked connection may still close, e.g. when the broker restarts: what it held was never confirmed
      failUnconfirmed(lost, lostTo, failures);
      String reason = blocked;
      unsent.forEach(e -> failures.put(e.id(), RabbitErrors.blocked(describe(e, keyOf(e)), reason)));
      return List.of();
    }
    ShutdownSignalException cause = channel.closedBy();
    if (cause == null) {
      failUnconfirmed(lost, lostTo, failures);
      return unsent.isEmpty() ? List.of() : List.copyOf(unsent); // spoiled by the client: go on elsewhere
    }
    Pending<OutboxEvent> culprit = RabbitErrors.causedByOneMessage(cause) ? RabbitErrors.culprit(cause, lost) : null;
    if (culprit == null) {
      failUnconfirmed(lost, cause, failures);
      unsent.forEach(e -> failures.put(e.id(), RabbitErrors.closed(describe(e, keyOf(e)), exchange, cause)));
      return List.of();
    }
    OutboxEvent bad = culprit.item();
    failures.put(bad.id(), RabbitErrors.refusedByBroker(describe(bad, keyOf(bad)), cause));
    LOG.debug("RabbitMQ closed a channel because of event {}; publishing the other {} again", bad.id(),
        lost.size() - 1 + unsent.size());
    List<OutboxEvent> again = new ArrayList<>();
    lost.stream().filter(p -> p != culprit).forEach(p -> again.add(p.item()));
    again.addAll(unsent);
    return again;
  }

  /** Messages outstanding when their channel closed ({@code cause}): their outcome is unknown. */
  private void failUnconfirmed(List<Pending<OutboxEvent>> lost, ShutdownSignalException cause,
      Map<UUID, Exception> failures) {
    for (Pending<OutboxEvent> p : lost) {
      failures.put(p.item().id(), RabbitErrors.closed(describe(p.item(), keyOf(p.item())), exchange, cause));
    }
  }

  /**
   * The failure an outcome other than {@code Closed} stands for, {@code null} for an ack. A closed channel is
   * left to the caller: whose fault it was depends on the other messages outstanding on it.
   */
  private OutboxException failureOf(ConfirmChannel.Outcome outcome, ConfirmChannel channel, Supplier<String> what) {
    if (outcome instanceof ConfirmChannel.Returned r) {
      return RabbitErrors.returned(what.get(), r.message());
    }
    if (outcome instanceof ConfirmChannel.Nacked) {
      return RabbitErrors.nacked(what.get());
    }
    if (outcome instanceof ConfirmChannel.TimedOut) {
      channel.spoil();
      return RabbitErrors.timedOut(what.get(), confirmTimeout);
    }
    return null;
  }

  private String checkedRoutingKey(OutboxEvent event) {
    String key;
    try {
      key = routingKey.apply(event);
    } catch (RuntimeException e) {
      throw RabbitErrors.refusedByClient("event " + event.id(), "the routing key function failed: " + e, e);
    }
    if (key == null || key.getBytes(StandardCharsets.UTF_8).length > MAX_SHORT_STRING) {
      throw RabbitErrors.refusedByClient(describe(event, key == null ? "null" : key.substring(0, Math.min(40, key.length())) + "…"),
          "a routing key must be 0 to 255 bytes of UTF-8", null);
    }
    return key;
  }

  /** The routing key for messages; never throws, whatever the user's function does. */
  private String keyOf(OutboxEvent event) {
    try {
      return routingKey.apply(event);
    } catch (RuntimeException e) {
      return "?";
    }
  }

  private static AMQP.BasicProperties propertiesOf(OutboxEvent event) {
    Map<String, Object> headers = new LinkedHashMap<>(OutboxHeaders.of(event));
    Instant created = event.createdAt() != null ? event.createdAt() : Instant.now();
    return new AMQP.BasicProperties.Builder()
        .messageId(event.id().toString())
        .contentType(CONTENT_TYPE)
        .deliveryMode(PERSISTENT)
        .timestamp(Date.from(created))
        .headers(headers)
        .build();
  }

  private static byte[] bodyOf(OutboxEvent event) {
    return event.payload().getBytes(StandardCharsets.UTF_8);
  }

  private String describe(OutboxEvent event, String key) {
    return "event " + event.id() + " to exchange '" + exchange + "' with routing key '" + key + "'";
  }

  /**
   * Checks that the exchange exists, e.g. before a long job starts publishing.
   *
   * @throws InvalidConfigurationException the exchange does not exist
   * @throws PublishUnavailableException RabbitMQ cannot be reached or did not answer
   */
  public void checkExchange() {
    ConfirmChannel channel = channels.borrow();
    try {
      if (!channel.exchangeExists(exchange)) {
        throw new InvalidConfigurationException("exchange '" + exchange + "' does not exist at "
            + channels.displayUri() + ": declare it, or name an existing exchange (the publisher never declares one)");
      }
    } catch (IOException | ShutdownSignalException e) {
      ShutdownSignalException s = e instanceof ShutdownSignalException sse ? sse
          : e.getCause() instanceof ShutdownSignalException sse ? sse : null;
      throw new PublishUnavailableException("RabbitMQ at " + channels.displayUri() + " could not say whether"
          + " exchange '" + exchange + "' exists (" + (s != null ? RabbitErrors.replyText(s) : e.toString()) + ")", e);
    } finally {
      channels.giveBack(channel);
    }
  }

  /**
   * Checks that the client can send {@code message} at all: a routing key and {@code message_id} of at most
   * 255 bytes, header names of at most 255 bytes, and properties that fit in one frame of the connection
   * ({@code frame_max}). Connects when not connected yet.
   *
   * @throws PublishRejectedException what is wrong (reply code -1), naming the message id but not the body
   * @throws PublishUnavailableException RabbitMQ cannot be reached
   */
  public void check(RabbitMqMessage message) {
    String what = describe(message);
    if (message.routingKey().getBytes(StandardCharsets.UTF_8).length > MAX_SHORT_STRING) {
      throw RabbitErrors.refusedByClient(what, "the routing key is "
          + message.routingKey().getBytes(StandardCharsets.UTF_8).length + " bytes of UTF-8, over AMQP's 255", null);
    }
    if (message.messageId().getBytes(StandardCharsets.UTF_8).length > MAX_SHORT_STRING) {
      throw RabbitErrors.refusedByClient(what, "the message_id is "
          + message.messageId().getBytes(StandardCharsets.UTF_8).length + " bytes of UTF-8, over AMQP's 255", null);
    }
    for (String name : message.headers().keySet()) {
      if (name.getBytes(StandardCharsets.UTF_8).length > MAX_SHORT_STRING) {
        throw RabbitErrors.refusedByClient(what, "a header name is " + name.getBytes(StandardCharsets.UTF_8).length
            + " bytes of UTF-8, over AMQP's 255", null);
      }
    }
    int frameMax = frameMax();
    long size;
    try {
      size = propertiesOf(message).toFrame(0, message.body().length).size();
    } catch (IOException | IllegalArgumentException e) {
      throw RabbitErrors.refusedByClient(what, "its properties cannot be encoded: " + e.getMessage(), e);
    }
    if (frameMax > 0 && size > frameMax) {
      throw RabbitErrors.refusedByClient(what, "its properties and headers take " + size + " bytes, over the"
          + " connection's frame_max of " + frameMax + " bytes: shorten the headers or raise frame_max", null);
    }
  }

  private int frameMax() {
    ConfirmChannel channel = channels.borrow();
    try {
      return channel.frameMax();
    } finally {
      channels.giveBack(channel);
    }
  }

  /**
   * Publishes {@code messages} in order on one channel, as {@link #dispatchBatch} publishes events (confirms,
   * {@code mandatory}, persistent, {@code application/json}, the confirm window), but stops sending at the
   * first message that fails: a returned message, a nack, no confirm in time, a closed channel.
   *
   * @return one entry per message, in order: {@code null} when the broker confirmed it, else its failure. A
   *     message not sent because an earlier one failed has a {@link PublishUnavailableException} saying so;
   *     messages that were in flight behind the first failure may have been confirmed all the same.
   * @throws PublishUnavailableException RabbitMQ is not reachable or blocks publishing: nothing was sent
   */
  public List<Exception> publishInOrder(List<RabbitMqMessage> messages) throws InterruptedException {
    Exception[] outcomes = new Exception[messages.size()];
    if (messages.isEmpty()) {
      return List.of();
    }
    String blocked = channels.blockedReason();
    if (blocked != null) {
      throw RabbitErrors.blocked("the " + messages.size() + " messages", blocked);
    }
    ConfirmChannel channel = channels.borrow();
    List<Pending<Integer>> sent = new ArrayList<>(messages.size());
    try {
      ArrayDeque<Pending<Integer>> window = new ArrayDeque<>();
      boolean failed = false;
      for (int i = 0; i < messages.size() && !failed; i++) {
        while (window.size() >= confirmWindow && !failed) {
          failed = !(window.poll().await() instanceof ConfirmChannel.Acked);
        }
        if (failed) {
          break; // the outcome of the one that failed is read below
        }
        RabbitMqMessage m = messages.get(i);
        Exception notSent = notSendable(channel, m);
        if (notSent != null) {
          outcomes[i] = notSent;
          break;
        }
        try {
          Pending<Integer> p = channel.publish(exchange, m.routingKey(), propertiesOf(m), m.body(), i,
              confirmTimeout.toNanos());
          sent.add(p);
          window.add(p);
        } catch (ShutdownSignalException | IOException e) {
          ShutdownSignalException cause = channel.closedBy();
          outcomes[i] = cause != null ? RabbitErrors.closed(describe(m), exchange, cause)
              : new PublishUnavailableException("could not send " + describe(m) + ": " + e, e);
          break;
        } catch (RuntimeException e) {
          channel.spoil();
          outcomes[i] = RabbitErrors.refusedByClient(describe(m), e.toString(), e);
          break;
        }
      }
      settleInOrder(channel, messages, sent, outcomes);
    } finally {
      channels.giveBack(channel);
    }
    for (int i = sent.size(); i < outcomes.length; i++) { // messages are sent in order: these never were
      if (outcomes[i] == null) {
        outcomes[i] = new PublishUnavailableException("message " + messages.get(i).messageId() + " was not sent:"
            + " an earlier message failed");
      }
    }
    return Collections.unmodifiableList(Arrays.asList(outcomes));
  }

  /** Why {@code m} cannot be sent on {@code channel} now, or {@code null}. */
  private Exception notSendable(ConfirmChannel channel, RabbitMqMessage m) {
    ShutdownSignalException closed = channel.closedBy();
    if (closed != null) {
      return RabbitErrors.closed(describe(m), exchange, closed);
    }
    String blocked = channels.blockedReason();
    if (blocked != null) {
      return RabbitErrors.blocked(describe(m), blocked);
    }
    if (m.routingKey().getBytes(StandardCharsets.UTF_8).length > MAX_SHORT_STRING) {
      return RabbitErrors.refusedByClient(describe(m), "a routing key must be 0 to 255 bytes of UTF-8", null);
    }
    return null;
  }

  /** Waits for the outcome of every message sent and records the failures. */
  private void settleInOrder(ConfirmChannel channel, List<RabbitMqMessage> messages, List<Pending<Integer>> sent,
      Exception[] outcomes) throws InterruptedException {
    List<Pending<Integer>> lost = new ArrayList<>();
    for (Pending<Integer> p : sent) {
      ConfirmChannel.Outcome outcome = p.await();
      RabbitMqMessage m = messages.get(p.item());
      if (outcome instanceof ConfirmChannel.Closed) {
        lost.add(p);
      } else {
        outcomes[p.item()] = failureOf(outcome, channel, () -> describe(m));
      }
    }
    ShutdownSignalException cause = channel.closedBy();
    if (lost.isEmpty() || cause == null) {
      return;
    }
    Pending<Integer> culprit = RabbitErrors.causedByOneMessage(cause) ? RabbitErrors.culprit(cause, lost) : null;
    for (Pending<Integer> p : lost) {
      String what = describe(messages.get(p.item()));
      outcomes[p.item()] = p == culprit ? RabbitErrors.refusedByBroker(what, cause)
          : RabbitErrors.closed(what, exchange, cause);
    }
  }

  private static AMQP.BasicProperties propertiesOf(RabbitMqMessage m) {
    return new AMQP.BasicProperties.Builder()
        .messageId(m.messageId())
        .contentType(CONTENT_TYPE)
        .deliveryMode(PERSISTENT)
        .timestamp(m.timestamp() == null ? null : Date.from(m.timestamp()))
        .headers(new LinkedHashMap<>(m.headers()))
        .build();
  }

  private String describe(RabbitMqMessage m) {
    return "message " + m.messageId() + " to exchange '" + exchange + "' with routing key '" + m.routingKey() + "'";
  }

  /** Closes the publisher's connection; publications after this fail as unavailable. */
  @Override
  public void close() {
    channels.close();
  }

  /** Options of a {@link RabbitMqPublisher}; {@link #build()} validates them. */
  public static final class Builder {
    private static final Pattern EXCHANGE = Pattern.compile("[A-Za-z0-9_.:-]{1,255}");
    private static final Pattern CONNECTION_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

    private String uri;
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
     * opens its own connection on first use. Credentials in the URI never reach logs or messages.
     */
    public Builder uri(String uri) {
      this.uri = uri;
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
        return new RabbitMqPublisher(this, copy, displayOf(copy));
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
      return new RabbitMqPublisher(this, factory, Urls.redact(uri));
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
