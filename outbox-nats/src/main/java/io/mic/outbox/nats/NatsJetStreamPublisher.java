package io.mic.outbox.nats;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.MessagePublisher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.OutgoingMessage;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.SendOutcome;
import io.mic.outbox.nats.internal.ConnectionPool;
import io.mic.outbox.nats.internal.ConnectionSource;
import io.mic.outbox.nats.internal.JetStreamChannel;
import io.mic.outbox.nats.internal.JetStreamSender;
import io.mic.outbox.nats.internal.Urls;
import io.mic.outbox.spi.BatchChannel;
import io.mic.outbox.spi.BrokerProbe;
import io.mic.outbox.spi.ChannelDispatchFn;
import io.nats.client.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox events to NATS JetStream; use it as the dispatcher's {@code dispatchFn}.
 *
 * <pre>{@code
 * try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder()
 *     .url("nats://127.0.0.1:4222")
 *     .build()) {
 *   OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher).build();
 *   dispatcher.dispatchOnce();
 * }
 * }</pre>
 *
 * <p>Each event becomes one message: subject = topic (after the optional prefix), payload = the JSON text
 * as UTF-8, headers = the event's headers plus {@code x-event-id}, {@code x-aggregate-type},
 * {@code x-aggregate-id} and {@code Nats-Msg-Id} = event id, so JetStream stores a republication inside
 * its duplicate window (2 minutes by default) only once. An event counts as published only when its
 * PubAck arrived; a PubAck is as durable as the stream's configuration makes it.
 *
 * <p>The dispatcher hands over whole batches ({@link #dispatchBatch}): they are published asynchronously
 * with at most {@link Builder#maxPendingAcks} acknowledgements outstanding, and only the acknowledged
 * events are marked dispatched. Batches published at the same time (several workers) go over connections of
 * their own, up to {@link Builder#connections} (default 2), opened as they are first needed. A worker's batches
 * go through its {@link #channel()}: the next one is sent while the last one's PubAcks still arrive, on the
 * same connection and within the same window, so the window does not run dry between batches.
 *
 * <p>Failures: {@link PublishUnavailableException} (no attempt counted) when NATS is unreachable or the
 * connection is closed, no stream answers for the subject (a configuration problem, not the event's
 * fault), no PubAck arrives within the ack timeout (unknown outcome), JetStream answers with a server
 * error (5xx: storage, cluster, stream full) or the subject belongs to another stream than
 * {@link Builder#expectedStream}. {@link PublishRejectedException} (an attempt counted) for every other
 * refusal, such as a message larger than the stream's {@code max_msg_size}, and for a message larger than
 * the server's {@code max_payload} (checked before sending: the server would close the connection, and every
 * other event on it would fail).
 *
 * <p>When a batch gets no PubAck at all and some timed out while the client still says {@code CONNECTED},
 * the publisher asks the server for a PONG and a JetStream answer (within the ack timeout, at most 2 s);
 * without an answer the connection is dead although it looks alive (it can happen after a server restart):
 * the publisher closes its own connection and opens a new one, or tells the application's connection to
 * reconnect. Use {@link #checkStreams} at start to find subjects without a stream.
 *
 * <p>Thread-safe. {@link #close()} closes only the connections this publisher opened.
 */
public final class NatsJetStreamPublisher implements ChannelDispatchFn, MessagePublisher, BrokerProbe {
  public static final Duration DEFAULT_ACK_TIMEOUT = Duration.ofSeconds(5);
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
  public static final int DEFAULT_MAX_PENDING_ACKS = 256;
  public static final int MAX_PENDING_ACKS_LIMIT = 10_000;
  public static final int DEFAULT_CONNECTIONS = 2;
  public static final int MAX_CONNECTIONS = 16;
  /** The longest ack or connect timeout: longer ones cannot be counted in the client's units, or waited for. */
  public static final Duration TIMEOUT_LIMIT = Duration.ofHours(1);
  public static final String DEFAULT_CONNECTION_NAME = "mic-outbox";

  private static final Logger LOG = LoggerFactory.getLogger(NatsJetStreamPublisher.class);

  private final JetStreamSender sender;

  private NatsJetStreamPublisher(Builder b) {
    List<ConnectionSource> sources = new ArrayList<>();
    if (b.connection != null) {
      sources.add(ConnectionSource.of(b.connection, b.ackTimeout));
    } else {
      for (int i = 0; i < b.connections(); i++) {
        sources.add(ConnectionSource.connectingTo(b.url, b.connectionName, b.connectTimeout, b.ackTimeout));
      }
    }
    this.sender = new JetStreamSender(new ConnectionPool(sources), b.subjectPrefix, b.ackTimeout, b.maxPendingAcks,
        b.expectedStream);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The subject {@code event} is published on: the prefix (if any), a dot, and the topic. */
  public String subjectOf(OutboxEvent event) {
    return sender.subjectOf(event.topic());
  }

  /**
   * Publishes one event and returns once JetStream acknowledged it (a duplicate acknowledgement counts).
   *
   * @throws PublishUnavailableException NATS or the stream is not available, or the outcome is unknown
   * @throws PublishRejectedException JetStream refused this event, or it can never take it
   */
  @Override
  public void dispatch(OutboxEvent event) throws InterruptedException {
    SendOutcome outcome = send(List.of(OutboxHeaders.messageOf(event)), false).get(0);
    if (outcome.failure() != null) {
      throw outcome.failure();
    }
  }

  /**
   * Publishes the batch with a bounded window of outstanding acknowledgements.
   *
   * @return the failure of each event that was not acknowledged, by id; absent = acknowledged
   * @throws PublishUnavailableException NATS is not reachable at all: nothing was sent
   */
  @Override
  public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws InterruptedException {
    ChannelDispatchFn.reportIfHidden(this);
    try (JetStreamChannel channel = sender.channel()) {
      return failures(events, channel.send(messagesOf(events), false).outcomes());
    }
  }

  /**
   * A channel for one dispatcher worker (see the class comment); its connection is let go once every batch sent
   * was settled.
   */
  @Override
  public BatchChannel channel() {
    JetStreamChannel channel = sender.channel();
    return new BatchChannel() {
      @Override
      public Sent send(List<OutboxEvent> events) throws InterruptedException {
        JetStreamChannel.Sending sending = channel.send(messagesOf(events), false);
        return () -> failures(events, sending.outcomes());
      }

      @Override
      public boolean overlapping() {
        return true;
      }

      @Override
      public void close() {
        channel.close();
      }
    };
  }

  private static List<OutgoingMessage> messagesOf(List<OutboxEvent> events) {
    return events.stream().map(OutboxHeaders::messageOf).toList();
  }

  private static Map<UUID, Exception> failures(List<OutboxEvent> events, List<SendOutcome> outcomes) {
    Map<UUID, Exception> failures = SendOutcome.failuresOf(events, outcomes);
    if (!failures.isEmpty()) {
      LOG.debug("{} events not acknowledged by JetStream", failures.size());
    }
    return failures;
  }

  /** Publishes the messages with a bounded window of outstanding acknowledgements, on one connection. */
  @Override
  public List<SendOutcome> send(List<OutgoingMessage> messages, boolean stopAtFirstFailure)
      throws InterruptedException {
    return sender.send(messages, stopAtFirstFailure);
  }

  /**
   * With {@link Builder#expectedStream}: checks that the stream exists and captures the destination's subject,
   * and learns its {@code max_msg_size} for {@link #check}; without, as {@link #checkStreams}.
   */
  @Override
  public void checkDestination(String destination) throws InterruptedException {
    sender.checkDestination(destination);
  }

  /**
   * Refuses a header value NATS cannot carry (printable ASCII only) and a message, headers included, over the
   * server's {@code max_payload} or the expected stream's {@code max_msg_size} (after {@link #checkDestination}).
   */
  @Override
  public void check(OutgoingMessage message) {
    try {
      sender.check(message);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new PublishUnavailableException("interrupted while connecting to NATS");
    }
  }

  /**
   * Checks that a JetStream stream captures the subject of each topic (and that it is the
   * {@link Builder#expectedStream}, when one is set), e.g. at application start; events on a subject without
   * a stream would wait forever.
   *
   * <pre>{@code
   * publisher.checkStreams(List.of("order.created", "order.paid"));
   * }</pre>
   *
   * @throws InvalidConfigurationException listing every subject without a (or the expected) stream, and how
   *     to create one
   * @throws PublishUnavailableException NATS or JetStream cannot be asked
   */
  public void checkStreams(Collection<String> topics) throws InterruptedException {
    sender.checkStreams(topics);
  }

  /**
   * Whether a publication could go now: each connection in use says {@code CONNECTED} and answers a PING and a
   * JetStream request and, after a publication found unavailable, the stream of its subject answers, with a
   * leader when replicated (each answer within the ack timeout, at most 500 ms). A dispatcher worker waiting out
   * an outage asks it, and resumes once it turns true.
   */
  @Override
  public boolean ready() throws InterruptedException {
    return sender.ready();
  }

  /** Closes the connections this publisher opened (built with {@link Builder#url}). */
  @Override
  public void close() {
    sender.close();
  }

  /** Options of a {@link NatsJetStreamPublisher}; {@link #build()} validates them. */
  public static final class Builder {
    private static final Pattern SUBJECT_PREFIX = Pattern.compile("[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*");
    private static final Pattern STREAM_NAME = Pattern.compile("[A-Za-z0-9_-]{1,255}");
    private static final Pattern CONNECTION_NAME = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

    private Connection connection;
    private String url;
    private String connectionName = DEFAULT_CONNECTION_NAME;
    private String subjectPrefix;
    private Duration ackTimeout = DEFAULT_ACK_TIMEOUT;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private int maxPendingAcks = DEFAULT_MAX_PENDING_ACKS;
    private Integer connections;
    private String expectedStream;

    private Builder() {}

    /**
     * Publish over the application's connection; the publisher never closes it. Should it close for good (it
     * gave up reconnecting; build it with {@code maxReconnects(-1)}), the publisher opens and owns a connection
     * with the same options, so that publishing resumes once the server is back. Build it with
     * {@code Options.Builder.dontForceFlushOnRequest()}, as the publisher's own connection is: with the client's
     * default every publication ends a socket write, and a batch costs NATS and this process about twice the CPU
     * per message.
     */
    public Builder connection(Connection connection) {
      this.connection = connection;
      return this;
    }

    /**
     * Let the publisher open (on first use) and close its own connection to this server, e.g.
     * {@code nats://127.0.0.1:4222}. It reconnects forever, lets a batch's messages share socket writes
     * ({@code dontForceFlushOnRequest}), and keeps credentials in the URL out of logs.
     */
    public Builder url(String url) {
      this.url = url;
      return this;
    }

    /**
     * At most this many connections of the publisher's own (default {@value #DEFAULT_CONNECTIONS}), each opened
     * when a publication finds every open one busy: batches published at the same time, by several dispatcher
     * workers, then go over connections of their own, which NATS reads in parallel (one connection is read by
     * one server thread, which limits what a single connection carries). Publications one after the other,
     * such as one worker's, use one connection and never open a second. Only with {@link #url}: a publisher on
     * the application's connection uses that one.
     */
    public Builder connections(int connections) {
      this.connections = connections;
      return this;
    }

    /** Name of the publisher's own connections, as the server shows them (default {@code mic-outbox}). */
    public Builder connectionName(String connectionName) {
      this.connectionName = connectionName;
      return this;
    }

    /** Prepended with a dot to every topic: prefix {@code acme} turns {@code order.created} into {@code acme.order.created}. */
    public Builder subjectPrefix(String subjectPrefix) {
      this.subjectPrefix = subjectPrefix;
      return this;
    }

    /** How long to wait for each PubAck (default 5 s); after that the outcome is unknown: unavailable. */
    public Builder ackTimeout(Duration ackTimeout) {
      this.ackTimeout = ackTimeout;
      return this;
    }

    /** How long one attempt to open the publisher's own connection may take (default 2 s). */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
      return this;
    }

    /** At most this many messages of a batch wait for their PubAck at once (default 256). */
    public Builder maxPendingAcks(int maxPendingAcks) {
      this.maxPendingAcks = maxPendingAcks;
      return this;
    }

    /**
     * Optional: the stream every subject must belong to. Each message then carries
     * {@code Nats-Expected-Stream}, and a subject captured by another stream fails as unavailable.
     */
    public Builder expectedStream(String expectedStream) {
      this.expectedStream = expectedStream;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong and how to fix it */
    public NatsJetStreamPublisher build() {
      require(connection != null ^ url != null, connection == null
          ? "connection or url is required: .url(\"nats://127.0.0.1:4222\") or .connection(natsConnection)"
          : "set either connection or url, not both: the publisher would not know which one to use");
      require(subjectPrefix == null || (subjectPrefix.length() <= 128
          && SUBJECT_PREFIX.matcher(subjectPrefix).matches()),
          "subjectPrefix must be dot-separated tokens of letters, digits, '_' or '-' without a trailing dot,"
              + " e.g. 'acme.events', was '" + subjectPrefix + "'");
      require(positive(ackTimeout), "ackTimeout must be > 0, was " + ackTimeout);
      require(ackTimeout.compareTo(TIMEOUT_LIMIT) <= 0,
          "ackTimeout must be > 0 and at most " + TIMEOUT_LIMIT + ", was " + ackTimeout);
      require(positive(connectTimeout), "connectTimeout must be > 0, was " + connectTimeout);
      require(connectTimeout.compareTo(TIMEOUT_LIMIT) <= 0,
          "connectTimeout must be > 0 and at most " + TIMEOUT_LIMIT + ", was " + connectTimeout);
      require(maxPendingAcks >= 1 && maxPendingAcks <= MAX_PENDING_ACKS_LIMIT,
          "maxPendingAcks must be between 1 and " + MAX_PENDING_ACKS_LIMIT + ", was " + maxPendingAcks);
      require(connections == null || (connections >= 1 && connections <= MAX_CONNECTIONS),
          "connections must be between 1 and " + MAX_CONNECTIONS + ", was " + connections);
      require(connection == null || connections == null || connections == 1,
          "connections(" + connections + ") needs url(...): a publisher on the application's connection uses that"
              + " one connection; build it with .url(\"nats://...\") to let it open several");
      require(expectedStream == null || STREAM_NAME.matcher(expectedStream).matches(),
          "expectedStream must be a stream name of letters, digits, '_' or '-', was '" + expectedStream + "'");
      require(connectionName != null && CONNECTION_NAME.matcher(connectionName).matches(),
          "connectionName must be 1 to 64 letters, digits, '_', '.' or '-', was '" + connectionName + "'");
      try {
        return new NatsJetStreamPublisher(this);
      } catch (IllegalArgumentException e) {
        // the client's message may quote the URL, and with it a password: name the option only
        throw new InvalidConfigurationException("url '" + Urls.redact(url) + "' is not a NATS server URL:"
            + " use e.g. nats://127.0.0.1:4222");
      }
    }

    private int connections() {
      return connections == null ? DEFAULT_CONNECTIONS : connections;
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
