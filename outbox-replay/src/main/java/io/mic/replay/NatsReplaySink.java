package io.mic.replay;

import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.nats.NatsJetStreamPublisher;
import io.mic.outbox.nats.internal.ConnectionSource;
import io.mic.outbox.nats.internal.PubAckWindow;
import io.mic.outbox.nats.internal.Urls;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.PublishOptions;
import io.nats.client.api.PublishAck;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import io.nats.client.support.NatsJetStreamConstants;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;

/**
 * Publishes a replay to a NATS JetStream stream, which must exist and capture the topic.
 *
 * <pre>{@code
 * try (NatsReplaySink sink = NatsReplaySink.builder().url("nats://127.0.0.1:4222").stream("ORDERS").build()) {
 *   EventReplay.builder().source(source).topic("order.created").from(from).to(to).sink(sink).build().run();
 * }
 * }</pre>
 *
 * <p>Messages go out in replay order over one connection, so the stream stores them in that order, with
 * up to {@link Builder#maxPendingAcks} waiting for their PubAck. Each carries
 * {@code Nats-Expected-Stream}, so a message can only land in the named stream. At the first message that
 * is not acknowledged (refused, or no PubAck within the ack timeout) the sink stops sending and reports it;
 * messages already in flight behind it may still have been stored, and a resumed run with the same batch
 * id republishes them under the same {@code Nats-Msg-Id}, which JetStream drops inside its duplicate window.
 *
 * <p>It publishes as the live {@link NatsJetStreamPublisher} does: the same connection handling (its URL
 * rules, credentials never shown), the same bounded PubAck window, and the same default timeouts.
 */
public final class NatsReplaySink implements ReplaySink {
  public static final Duration DEFAULT_ACK_TIMEOUT = NatsJetStreamPublisher.DEFAULT_ACK_TIMEOUT;
  public static final Duration DEFAULT_CONNECT_TIMEOUT = NatsJetStreamPublisher.DEFAULT_CONNECT_TIMEOUT;
  public static final int DEFAULT_MAX_PENDING_ACKS = NatsJetStreamPublisher.DEFAULT_MAX_PENDING_ACKS;
  public static final int STREAM_NOT_FOUND = 10059;

  private static final String CONNECTION_NAME = "mic-events-replay";

  private static final Pattern STREAM_NAME = Pattern.compile("[A-Za-z0-9_-]{1,255}");

  private final ConnectionSource connections;
  private final String stream;
  private final Duration ackTimeout;
  private final int maxPendingAcks;
  private JetStream jetStream;
  /** What the destination takes, learnt in prepare: the server's max_payload, the stream's max_msg_size (-1: none). */
  private long serverMaxPayload = Long.MAX_VALUE;
  private long streamMaxMessageSize = -1;

  private NatsReplaySink(Builder b, ConnectionSource connections) {
    this.connections = connections;
    this.stream = b.stream;
    this.ackTimeout = b.ackTimeout;
    this.maxPendingAcks = b.maxPendingAcks;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Connects, then checks that the stream exists and captures the topic. */
  @Override
  public void prepare(ReplayQuery query) throws InterruptedException {
    try {
      ConnectionSource.Session session;
      try {
        session = connections.session();
      } catch (PublishUnavailableException e) {
        // its message may say how a dispatcher waits; the cause is what a replay's user needs
        throw new IOException(e.getCause() != null ? e.getCause().toString() : "no server answered");
      }
      Connection connection = session.connection();
      jetStream = session.jetStream();
      JetStreamManagement jsm = connection.jetStreamManagement();
      StreamConfiguration config = jsm.getStreamInfo(stream).getConfiguration();
      List<String> subjects = config.getSubjects();
      streamMaxMessageSize = config.getMaximumMessageSize();
      serverMaxPayload = connection.getServerInfo().getMaxPayload();
      if (!jsm.getStreamNames(query.topic()).contains(stream)) {
        throw new ReplayConfigurationException("stream", "NATS stream '" + stream + "' does not capture subject '"
            + query.topic() + "' (its subjects: " + subjects + "): add the subject to the stream or name the"
            + " stream that captures it");
      }
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() == STREAM_NOT_FOUND) {
        throw new ReplayConfigurationException("stream", "NATS stream '" + stream + "' does not exist at "
            + where() + ": create it (its subjects must include '" + query.topic() + "') or name an existing"
            + " stream");
      }
      throw new ReplaySinkException(0, 0, "JetStream at " + where() + " refused to describe stream '" + stream
          + "': " + e.getMessage(), e);
    } catch (IOException e) {
      // the client quotes the URL with its password in its messages: report the root cause only
      throw new ReplaySinkException(0, 0, "cannot use JetStream at " + where() + " (" + rootCause(e)
          + "): check the URL, that the server runs and that JetStream is enabled", null);
    }
  }

  private String where() {
    return connections.displayUrl();
  }

  /** The root cause, or the message when it does not quote a URL (and so maybe a password). */
  private static String rootCause(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    if (root != e) {
      return root.toString();
    }
    String message = e.getMessage();
    return message == null || message.contains("://") ? "no server answered" : message;
  }

  /**
   * Refuses what JetStream would refuse mid-batch: a header value NATS cannot carry (the id, aggregate type and
   * aggregate id become headers) and a message, headers included, over the server's {@code max_payload} or the
   * stream's {@code max_msg_size}.
   */
  @Override
  public void validate(ReplayMessage m) {
    for (Map.Entry<String, String> h : m.headers().entrySet()) {
      String value = h.getValue();
      for (int i = 0; i < value.length(); i++) {
        char c = value.charAt(i);
        if ((c < 0x20 && c != '\t') || c > 0x7e) {
          throw new UnpublishableEventException("event " + m.event().id() + " cannot go to NATS: header " + h.getKey()
              + " (from " + origin(h.getKey()) + ") has a character NATS headers cannot carry at index " + i
              + " (U+" + String.format(Locale.ROOT, "%04X", (int) c) + "): header values are printable ASCII");
        }
      }
    }
    Headers sent = new Headers(); // as send() and the client put them on the wire
    m.headers().forEach(sent::put);
    sent.put(NatsJetStreamConstants.MSG_ID_HDR, m.msgId());
    sent.put(NatsJetStreamConstants.EXPECTED_STREAM_HDR, stream);
    long payload = m.payloadBytes().length;
    long size = payload + sent.serializedLength();
    boolean streamLimit = streamMaxMessageSize >= 0 && streamMaxMessageSize < serverMaxPayload;
    long limit = streamLimit ? streamMaxMessageSize : serverMaxPayload;
    if (size > limit) {
      throw new UnpublishableEventException("event " + m.event().id() + " cannot go to NATS: the message would be "
          + size + " bytes (payload " + payload + " + headers " + sent.serializedLength() + "), over the " + limit
          + (streamLimit ? " bytes of stream " + stream + "'s max_msg_size: raise the stream's limit"
              : " bytes of the server's max_payload: raise max_payload in the server's configuration")
          + " or leave the event out of the range");
    }
  }

  private static String origin(String header) {
    return switch (header) {
      case OutboxHeaders.ORIGINAL_EVENT_ID -> "the id";
      case OutboxHeaders.AGGREGATE_TYPE -> "aggregate_type";
      case OutboxHeaders.AGGREGATE_ID -> "aggregate_id";
      default -> "headers";
    };
  }

  private final AtomicLong duplicates = new AtomicLong();

  @Override
  public void publish(List<ReplayMessage> messages) throws InterruptedException {
    if (jetStream == null) {
      throw new IllegalStateException("prepare() must be called before publish()");
    }
    Outcomes outcomes = new Outcomes(messages);
    PubAckWindow<Integer> window = new PubAckWindow<>(maxPendingAcks, ackTimeout, outcomes);
    for (int i = 0; i < messages.size() && outcomes.first == null; i++) {
      window.makeRoom();
      if (outcomes.first == null) {
        try {
          window.add(i, send(messages.get(i)));
        } catch (RuntimeException e) {
          outcomes.first = new Failure(i, describe(messages.get(i)) + ": " + e.getMessage(), e);
        }
      }
    }
    window.drain(); // stop sending at the first failure, but learn the outcome of everything still in flight
    Failure first = outcomes.first;
    if (first != null) {
      int acknowledgedAfter = (int) outcomes.ackedAfterAFailure.stream().filter(i -> i > first.index).count();
      throw new ReplaySinkException(first.index, acknowledgedAfter, first.message, first.cause);
    }
  }

  /** The first failure of a batch (by index), and what was acknowledged once a failure was known. */
  private final class Outcomes implements PubAckWindow.Outcomes<Integer> {
    private final List<ReplayMessage> messages;
    private final List<Integer> ackedAfterAFailure = new ArrayList<>();
    private Failure first;

    Outcomes(List<ReplayMessage> messages) {
      this.messages = messages;
    }

    @Override
    public void acknowledged(Integer index, PublishAck ack) {
      if (ack.isDuplicate()) {
        duplicates.incrementAndGet();
      }
      if (first != null) {
        ackedAfterAFailure.add(index);
      }
    }

    @Override
    public void failed(Integer index, Throwable cause) {
      String reason = cause instanceof TimeoutException
          ? "no PubAck within " + ackTimeout + " (the outcome is unknown)"
          : cause.getMessage();
      if (first == null || index < first.index) {
        first = new Failure(index, describe(messages.get(index)) + ": " + reason, cause);
      }
    }
  }

  @Override
  public long duplicates() {
    return duplicates.get();
  }

  private CompletableFuture<PublishAck> send(ReplayMessage m) {
    Headers headers = new Headers();
    m.headers().forEach(headers::put);
    PublishOptions options = PublishOptions.builder().messageId(m.msgId()).expectedStream(stream).build();
    return jetStream.publishAsync(m.subject(), headers, m.payloadBytes(), options);
  }

  private static String describe(ReplayMessage m) {
    return "event " + m.event().id() + " on subject '" + m.subject() + "'";
  }

  /** Closes the connection if this sink opened it (built with {@link Builder#url}). */
  @Override
  public void close() {
    connections.close();
  }

  private record Failure(int index, String message, Throwable cause) {}

  /** Options of a {@link NatsReplaySink}; {@link #build()} validates them. */
  public static final class Builder {
    private String url;
    private Connection connection;
    private String stream;
    private Duration ackTimeout = DEFAULT_ACK_TIMEOUT;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
    private int maxPendingAcks = DEFAULT_MAX_PENDING_ACKS;

    private Builder() {}

    /** The server, e.g. {@code nats://127.0.0.1:4222}; the sink connects in {@code prepare} and closes on {@code close}. */
    public Builder url(String url) {
      this.url = url;
      return this;
    }

    /** Or the application's connection, which the sink never closes. */
    public Builder connection(Connection connection) {
      this.connection = connection;
      return this;
    }

    /** Required: the stream that must capture the topic. */
    public Builder stream(String stream) {
      this.stream = stream;
      return this;
    }

    /** How long to wait for each PubAck (default 5 s, as the live publisher). */
    public Builder ackTimeout(Duration ackTimeout) {
      this.ackTimeout = ackTimeout;
      return this;
    }

    /** How long connecting may take (default 2 s, as the live publisher). */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
      return this;
    }

    /** At most this many messages wait for their PubAck at once (default 256; 1 = one at a time). */
    public Builder maxPendingAcks(int maxPendingAcks) {
      this.maxPendingAcks = maxPendingAcks;
      return this;
    }

    private static void requireNatsUrl(String url) {
      try {
        ConnectionSource.connectingOnce(url, CONNECTION_NAME, DEFAULT_CONNECT_TIMEOUT, DEFAULT_ACK_TIMEOUT);
      } catch (IllegalArgumentException e) {
        // the client's message may quote the URL, and with it a password: name the option only
        throw new ReplayConfigurationException("url", "url '" + Urls.redact(url) + "' is not a NATS server"
            + " URL: use e.g. nats://127.0.0.1:4222");
      }
    }

    /** @throws ReplayConfigurationException naming the option that is wrong */
    public NatsReplaySink build() {
      if ((url == null) == (connection == null)) {
        throw new ReplayConfigurationException("url", "set exactly one of url (e.g. nats://127.0.0.1:4222) and"
            + " connection");
      }
      // the URL is checked first (by the client that will use it), then the other options, then it is used
      if (url != null) {
        requireNatsUrl(url);
      }
      if (stream == null || !STREAM_NAME.matcher(stream).matches()) {
        throw new ReplayConfigurationException("stream", "stream must be a JetStream stream name (letters,"
            + " digits, '_' or '-'), was " + (stream == null ? "missing" : "'" + stream + "'"));
      }
      if (ackTimeout == null || ackTimeout.isNegative() || ackTimeout.isZero()) {
        throw new ReplayConfigurationException("ackTimeout", "ackTimeout must be > 0, was " + ackTimeout);
      }
      if (connectTimeout == null || connectTimeout.isNegative() || connectTimeout.isZero()) {
        throw new ReplayConfigurationException("connectTimeout", "connectTimeout must be > 0, was " + connectTimeout);
      }
      if (maxPendingAcks < 1 || maxPendingAcks > NatsJetStreamPublisher.MAX_PENDING_ACKS_LIMIT) {
        throw new ReplayConfigurationException("maxPendingAcks", "maxPendingAcks must be between 1 and "
            + NatsJetStreamPublisher.MAX_PENDING_ACKS_LIMIT + ", was " + maxPendingAcks);
      }
      return new NatsReplaySink(this, connection != null ? ConnectionSource.of(connection, ackTimeout)
          : ConnectionSource.connectingOnce(url, CONNECTION_NAME, connectTimeout, ackTimeout));
    }
  }
}
