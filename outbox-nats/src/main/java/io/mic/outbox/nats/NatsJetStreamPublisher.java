package io.mic.outbox.nats;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.nats.internal.ConnectionSource;
import io.mic.outbox.nats.internal.NatsErrors;
import io.mic.outbox.nats.internal.Urls;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
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
 * events are marked dispatched.
 *
 * <p>Failures: {@link PublishUnavailableException} (no attempt counted) when NATS is unreachable or the
 * connection is closed, no stream answers for the subject (a configuration problem, not the event's
 * fault), no PubAck arrives within the ack timeout (unknown outcome), JetStream answers with a server
 * error (5xx: storage, cluster, stream full) or the subject belongs to another stream than
 * {@link Builder#expectedStream}. {@link PublishRejectedException} (an attempt counted) for every other
 * refusal, such as a message larger than the stream's {@code max_msg_size}.
 *
 * <p>Thread-safe. {@link #close()} closes the connection only if this publisher opened it.
 */
public final class NatsJetStreamPublisher implements BatchDispatchFn, AutoCloseable {
  public static final Duration DEFAULT_ACK_TIMEOUT = Duration.ofSeconds(5);
  public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
  public static final int DEFAULT_MAX_PENDING_ACKS = 256;
  public static final int MAX_PENDING_ACKS_LIMIT = 10_000;
  public static final String DEFAULT_CONNECTION_NAME = "mic-outbox";

  public static final String EVENT_ID_HEADER = "x-event-id";
  public static final String AGGREGATE_TYPE_HEADER = "x-aggregate-type";
  public static final String AGGREGATE_ID_HEADER = "x-aggregate-id";

  private static final Logger LOG = LoggerFactory.getLogger(NatsJetStreamPublisher.class);

  private final ConnectionSource connections;
  private final String subjectPrefix;
  private final Duration ackTimeout;
  private final int maxPendingAcks;
  private final String expectedStream;

  private NatsJetStreamPublisher(Builder b) {
    this.connections = b.connection != null
        ? ConnectionSource.of(b.connection, b.ackTimeout)
        : ConnectionSource.connectingTo(b.url, b.connectionName, b.connectTimeout, b.ackTimeout);
    this.subjectPrefix = b.subjectPrefix == null ? "" : b.subjectPrefix + ".";
    this.ackTimeout = b.ackTimeout;
    this.maxPendingAcks = b.maxPendingAcks;
    this.expectedStream = b.expectedStream;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The subject {@code event} is published on: the prefix (if any), a dot, and the topic. */
  public String subjectOf(OutboxEvent event) {
    return subjectPrefix + event.topic();
  }

  /**
   * Publishes one event and returns once JetStream acknowledged it (a duplicate acknowledgement counts).
   *
   * @throws PublishUnavailableException NATS or the stream is not available, or the outcome is unknown
   * @throws PublishRejectedException JetStream refused this event
   */
  @Override
  public void dispatch(OutboxEvent event) throws InterruptedException {
    JetStream js = connections.jetStream();
    await(event, send(js, event));
  }

  /**
   * Publishes the batch with a bounded window of outstanding acknowledgements.
   *
   * @return the failure of each event that was not acknowledged, by id; absent = acknowledged
   * @throws PublishUnavailableException NATS is not reachable at all: nothing was sent
   */
  @Override
  public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws InterruptedException {
    JetStream js = connections.jetStream();
    Map<UUID, Exception> failures = new LinkedHashMap<>();
    ArrayDeque<InFlight> window = new ArrayDeque<>();
    PublishUnavailableException down = null;
    for (OutboxEvent event : events) {
      if (window.size() >= maxPendingAcks) {
        settle(window.poll(), failures);
      }
      if (down == null && !failures.isEmpty() && !connections.looksConnected()) {
        down = new PublishUnavailableException("not sent: the NATS connection went down during this batch");
      }
      if (down != null) {
        failures.put(event.id(), down);
        continue;
      }
      try {
        window.add(new InFlight(event, send(js, event)));
      } catch (PublishUnavailableException e) {
        failures.put(event.id(), e);
        down = e; // the client refused to send: the connection is closed, later events would fail alike
      } catch (PublishRejectedException e) {
        failures.put(event.id(), e);
      }
    }
    while (!window.isEmpty()) {
      settle(window.poll(), failures);
    }
    if (!failures.isEmpty()) {
      LOG.debug("{} of {} events not acknowledged by JetStream", failures.size(), events.size());
    }
    return failures;
  }

  private void settle(InFlight inFlight, Map<UUID, Exception> failures) throws InterruptedException {
    try {
      await(inFlight.event, inFlight.ack);
    } catch (PublishUnavailableException | PublishRejectedException e) {
      failures.put(inFlight.event.id(), e);
    }
  }

  private CompletableFuture<PublishAck> send(JetStream js, OutboxEvent event) {
    try {
      Headers headers = new Headers(); // refuses values NATS cannot carry (non-ASCII): this event's fault
      event.headers().forEach(headers::put);
      headers.put(EVENT_ID_HEADER, event.id().toString());
      headers.put(AGGREGATE_TYPE_HEADER, event.aggregateType());
      headers.put(AGGREGATE_ID_HEADER, event.aggregateId());
      PublishOptions options = PublishOptions.builder()
          .messageId(event.id().toString())
          .expectedStream(expectedStream)
          .build();
      byte[] payload = event.payload().getBytes(StandardCharsets.UTF_8);
      return js.publishAsync(subjectOf(event), headers, payload, options)
          .orTimeout(ackTimeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (RuntimeException e) {
      throw NatsErrors.classify(e, describe(event), ackTimeout);
    }
  }

  private void await(OutboxEvent event, CompletableFuture<PublishAck> ack) throws InterruptedException {
    try {
      PublishAck pubAck = ack.get(); // bounded: orTimeout completes it after the ack timeout
      if (pubAck.isDuplicate()) {
        LOG.debug("event {} was already in stream {}: JetStream dropped the duplicate", event.id(),
            pubAck.getStream());
      }
    } catch (ExecutionException e) {
      throw NatsErrors.classify(e, describe(event), ackTimeout);
    }
  }

  private String describe(OutboxEvent event) {
    return "event " + event.id() + " on subject '" + subjectOf(event) + "'";
  }

  /** Closes the connection if this publisher opened it (built with {@link Builder#url}). */
  @Override
  public void close() {
    connections.close();
  }

  private record InFlight(OutboxEvent event, CompletableFuture<PublishAck> ack) {}

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
    private String expectedStream;

    private Builder() {}

    /** Publish over the application's connection; the publisher never closes it. */
    public Builder connection(Connection connection) {
      this.connection = connection;
      return this;
    }

    /**
     * Let the publisher open (on first use) and close its own connection to this server, e.g.
     * {@code nats://127.0.0.1:4222}. It reconnects forever; credentials in the URL never reach logs.
     */
    public Builder url(String url) {
      this.url = url;
      return this;
    }

    /** Name of the publisher's own connection, as the server shows it (default {@code mic-outbox}). */
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
      require(positive(connectTimeout), "connectTimeout must be > 0, was " + connectTimeout);
      require(maxPendingAcks >= 1 && maxPendingAcks <= MAX_PENDING_ACKS_LIMIT,
          "maxPendingAcks must be between 1 and " + MAX_PENDING_ACKS_LIMIT + ", was " + maxPendingAcks);
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
