package io.mic.outbox.nats.internal;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutgoingMessage;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.SendOutcome;
import io.mic.outbox.nats.internal.ConnectionSource.Session;
import io.nats.client.Connection;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamManagement;
import io.nats.client.JetStreamOptions;
import io.nats.client.api.ClusterInfo;
import io.nats.client.api.PublishAck;
import io.nats.client.api.ServerInfo;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one way messages go to JetStream, for live events and replays alike: subject = prefix + destination,
 * headers + {@code Nats-Msg-Id} (+ {@code Nats-Expected-Stream}), a bounded window of PubAcks per channel, and
 * the checks of what a server or stream can take.
 */
public final class JetStreamSender implements AutoCloseable {
  public static final String MSG_ID_HEADER = "Nats-Msg-Id";
  private static final String EXPECTED_STREAM_HEADER = "Nats-Expected-Stream";
  /** JetStream API error: no stream of that name. */
  private static final int STREAM_NOT_FOUND = 10059;
  /** How long the probe waits for each answer: a probe that waits longer ends a dispatcher's wait later. */
  private static final Duration MAX_READY_TIMEOUT = Duration.ofMillis(500);
  /** Destinations whose stream is remembered at most; beyond, the memory starts over. */
  private static final int MAX_KNOWN_SUBJECTS = 1_000;
  /** How long a connection whose PubAcks timed out may take to answer a PING before it is replaced. */
  private static final Duration MAX_PROBE_TIMEOUT = Duration.ofSeconds(2);
  private static final Logger LOG = LoggerFactory.getLogger(JetStreamSender.class);

  final ConnectionPool connections;
  private final String subjectPrefix;
  final Duration ackTimeout;
  final int maxPendingAcks;
  private final String expectedStream;
  final Duration probeTimeout;
  private final NoResponders noResponders;
  private final Duration readyTimeout;
  /** The destination of the last publication found unavailable, whose stream {@link #ready} asks for; null: none. */
  private volatile String lastUnavailable;
  /**
   * After an outage, how long publications wait for their PubAck (nanoseconds; 0: the ack timeout). A stream
   * whose replicas just elected a leader answers {@link #ready} a moment before it takes messages; a publication
   * sent in that moment gets no PubAck, and waiting the whole ack timeout for it would keep the events back that
   * long after the stream took messages again. So the first wait after each return is the probe's, doubled on each
   * return that follows without a PubAck up to the ack timeout (a slow stream still gets its time), and the first
   * PubAck ends it.
   */
  private volatile long recoveryWait;
  /**
   * The stream of each destination, from its last PubAck: {@link #ready} asks that stream, which answers once it
   * has a leader, where finding it by subject needs JetStream's meta leader too, often elected later.
   */
  private final Map<String, String> streams = new ConcurrentHashMap<>();
  /** The expected stream's max_msg_size, learnt by {@link #checkDestination}; -1: none or not known. */
  private volatile long streamMaxMessageSize = -1;

  public JetStreamSender(ConnectionPool connections, String subjectPrefix, Duration ackTimeout, int maxPendingAcks,
      String expectedStream) {
    this.connections = connections;
    this.subjectPrefix = subjectPrefix == null ? "" : subjectPrefix + ".";
    this.ackTimeout = ackTimeout;
    this.maxPendingAcks = maxPendingAcks;
    this.expectedStream = expectedStream;
    this.probeTimeout = ackTimeout.compareTo(MAX_PROBE_TIMEOUT) < 0 ? ackTimeout : MAX_PROBE_TIMEOUT;
    this.noResponders = new NoResponders(connections, probeTimeout);
    this.readyTimeout = ackTimeout.compareTo(MAX_READY_TIMEOUT) < 0 ? ackTimeout : MAX_READY_TIMEOUT;
  }

  public String subjectOf(String destination) {
    return subjectPrefix + destination;
  }

  /** A channel: its batches share one connection and one window of PubAcks. */
  public JetStreamChannel channel() {
    return new JetStreamChannel(this);
  }

  CompletableFuture<PublishAck> publish(Session session, OutgoingMessage m) {
    String subject = subjectOf(m.destination());
    try {
      Headers headers = headersOf(m); // refuses values NATS cannot carry (non-ASCII): this message's fault
      requireWithinMaxPayload(session, m, subject, headers.serializedLength() + (long) m.payload().length);
      return session.jetStream().publishAsync(subject, headers, m.payload());
    } catch (RuntimeException e) {
      throw classify(e, m);
    }
  }

  OutboxException classify(Throwable e, OutgoingMessage m) {
    return classify(e, m, ackTimeout);
  }

  /** As {@link #classify(Throwable, OutgoingMessage)}, for a publication that waited {@code wait} for its PubAck. */
  OutboxException classify(Throwable e, OutgoingMessage m, Duration wait) {
    String subject = subjectOf(m.destination());
    OutboxException failure = NatsErrors.isNoRespondersFailure(e) ? noResponders.explain(subject, m.eventId())
        : NatsErrors.classify(e, m.eventId(), subject, wait);
    if (failure instanceof PublishUnavailableException) {
      lastUnavailable = m.destination();
    }
    return failure;
  }

  private Headers headersOf(OutgoingMessage m) {
    Headers headers = new Headers();
    m.headers().forEach(headers::put);
    headers.put(MSG_ID_HEADER, m.deduplicationId());
    if (expectedStream != null) {
      headers.put(EXPECTED_STREAM_HEADER, expectedStream);
    }
    return headers;
  }

  /** A message over the server's max_payload makes the server close the connection, for every message on it. */
  private static void requireWithinMaxPayload(Session session, OutgoingMessage m, String subject, long size) {
    ServerInfo server = session.connection().getServerInfo();
    long max = server == null ? 0 : server.getMaxPayload();
    if (max > 0 && size > max) {
      throw new PublishRejectedException("NATS can never take event " + m.eventId() + " on subject '" + subject
          + "': with its headers the message is " + size + " bytes and the server's max_payload is " + max
          + " bytes; it was not sent (the server would close the connection): raise max_payload on the server"
          + " or make the event smaller", null, null);
    }
  }

  SendOutcome acknowledged(OutgoingMessage m, PublishAck ack) {
    String destination = m.destination();
    if (!ack.getStream().equals(streams.get(destination))) {
      if (streams.size() >= MAX_KNOWN_SUBJECTS) {
        streams.clear();
      }
      streams.put(destination, ack.getStream());
    }
    recoveryWait = 0;
    if (!ack.isDuplicate()) {
      return SendOutcome.ACKNOWLEDGED;
    }
    LOG.debug("event {} was already in stream {}: JetStream dropped the duplicate", m.eventId(), ack.getStream());
    return SendOutcome.DUPLICATE;
  }

  public void check(OutgoingMessage m) throws InterruptedException {
    m.headers().forEach((name, value) -> {
      for (int i = 0; i < value.length(); i++) {
        char c = value.charAt(i);
        if ((c < 0x20 && c != '\t') || c > 0x7e) {
          throw new PublishRejectedException("cannot go to NATS: header " + name + " has a character NATS headers"
              + " cannot carry at index " + i + " (U+" + String.format(Locale.ROOT, "%04X", (int) c)
              + "): header values are printable ASCII", null, null);
        }
      }
    });
    Headers sent = headersOf(m);
    long payload = m.payload().length;
    long size = payload + sent.serializedLength();
    ServerInfo server = connections.first().session().connection().getServerInfo();
    long serverMax = server == null || server.getMaxPayload() <= 0 ? Long.MAX_VALUE : server.getMaxPayload();
    long streamMax = streamMaxMessageSize;
    boolean streamLimit = streamMax >= 0 && streamMax < serverMax;
    long limit = streamLimit ? streamMax : serverMax;
    if (size > limit) {
      throw new PublishRejectedException("cannot go to NATS: the message would be " + size + " bytes (payload "
          + payload + " + headers " + sent.serializedLength() + "), over the " + limit
          + (streamLimit ? " bytes of stream " + expectedStream + "'s max_msg_size: raise the stream's limit"
              : " bytes of the server's max_payload: raise max_payload in the server's configuration"), null, null);
    }
  }

  /** Checks that the expected stream (or, without one, any stream) captures the destination's subject. */
  public void checkDestination(String destination) throws InterruptedException {
    if (expectedStream == null) {
      checkStreams(List.of(destination));
      return;
    }
    String subject = subjectOf(destination);
    JetStreamManagement jsm = management();
    try {
      StreamConfiguration config;
      try {
        config = jsm.getStreamInfo(expectedStream).getConfiguration();
      } catch (JetStreamApiException e) {
        if (e.getApiErrorCode() == STREAM_NOT_FOUND) {
          throw new InvalidConfigurationException("NATS stream '" + expectedStream + "' does not exist at "
              + where() + ": create it (its subjects must include '" + subject + "') or name an existing stream");
        }
        throw new PublishUnavailableException("JetStream at " + where() + " refused to describe stream '"
            + expectedStream + "': " + e.getMessage(), e);
      }
      streamMaxMessageSize = config.getMaximumMessageSize();
      if (!jsm.getStreamNames(subject).contains(expectedStream)) {
        throw new InvalidConfigurationException("NATS stream '" + expectedStream + "' does not capture subject '"
            + subject + "' (its subjects: " + config.getSubjects() + "): add the subject to the stream or name the"
            + " stream that captures it");
      }
    } catch (IOException | JetStreamApiException e) {
      throw unusable(e);
    }
  }

  private JetStreamManagement management() throws InterruptedException {
    Connection connection;
    try {
      connection = connections.first().session().connection();
      return connection.jetStreamManagement(JetStreamOptions.builder().requestTimeout(ackTimeout).build());
    } catch (PublishUnavailableException e) {
      // its message says how a dispatcher waits; the cause is what a one-off check needs
      throw new PublishUnavailableException("cannot use JetStream at " + where() + " (" + (e.getCause() != null
          ? e.getCause().toString() : "no server answered") + "): check the URL, that the server runs and that"
          + " JetStream is enabled", null);
    } catch (IOException e) {
      throw unusable(e);
    }
  }

  /** The client quotes the URL with its password in its messages: report the root cause only. */
  private PublishUnavailableException unusable(Exception e) {
    Throwable root = NatsErrors.rootOfConnectFailure(e);
    String message = e.getMessage();
    String cause = root != null ? root.toString()
        : message == null || message.contains("://") ? "no server answered" : message;
    return new PublishUnavailableException("cannot use JetStream at " + where() + " (" + cause + "): check the URL,"
        + " that the server runs and that JetStream is enabled", null);
  }

  private String where() {
    return connections.first().displayUrl();
  }

  /** See {@code NatsJetStreamPublisher.checkStreams}. */
  public void checkStreams(Collection<String> topics) throws InterruptedException {
    Session session = connections.first().session();
    List<String> missing = new ArrayList<>();
    List<String> elsewhere = new ArrayList<>();
    try {
      JetStreamManagement jsm = session.connection().jetStreamManagement(
          JetStreamOptions.builder().requestTimeout(ackTimeout).build());
      for (String topic : topics) {
        String subject = subjectOf(topic);
        List<String> streams = jsm.getStreamNames(subject);
        if (streams.isEmpty()) {
          missing.add(subject);
        } else if (expectedStream != null && !streams.contains(expectedStream)) {
          elsewhere.add("'" + subject + "' (captured by " + String.join(", ", streams) + ")");
        }
      }
    } catch (IOException | JetStreamApiException e) {
      throw new PublishUnavailableException("cannot list the JetStream streams over " + where() + ": "
          + e.getMessage() + "; check that the server runs with JetStream enabled (nats-server -js)", null);
    }
    List<String> problems = new ArrayList<>();
    if (!missing.isEmpty()) {
      problems.add("no JetStream stream captures " + (missing.size() == 1 ? "subject '" + missing.get(0) + "'"
          : "subjects '" + String.join("', '", missing) + "'") + ": create one, e.g. 'nats stream add EVENTS"
          + missing.stream().map(m -> " --subjects \"" + m + "\"").reduce("", String::concat) + "' or, in"
          + " Java, jetStreamManagement.addStream(StreamConfiguration.builder().name(\"EVENTS\").subjects("
          + missing.stream().map(m -> "\"" + m + "\"").reduce((a, b) -> a + ", " + b).orElse("")
          + ").build())");
    }
    if (!elsewhere.isEmpty()) {
      problems.add("not captured by the expected stream '" + expectedStream + "': " + String.join(", ", elsewhere)
          + "; add the subjects to '" + expectedStream + "' or change expectedStream");
    }
    if (!problems.isEmpty()) {
      throw new InvalidConfigurationException(String.join("; ", problems));
    }
  }

  /**
   * Whether NATS and JetStream answer on every connection a publication may get and, after a publication found
   * unavailable, whether the stream of its subject answers, with a leader when it is replicated: a cluster that
   * lost a stream's quorum keeps its connections and answers account requests, but takes no message.
   */
  public boolean ready() throws InterruptedException {
    if (!connections.ready(readyTimeout)) {
      return false;
    }
    String destination = lastUnavailable;
    if (destination != null && !streamAnswers(destination)) {
      return false;
    }
    if (destination != null) {
      long wait = recoveryWait;
      recoveryWait = wait == 0 ? readyTimeout.toNanos() : Math.min(2 * wait, ackTimeout.toNanos());
    }
    lastUnavailable = null;
    return true;
  }

  /** How long a publication sent now waits for its PubAck: the ack timeout, or less right after an outage. */
  Duration ackWait() {
    long wait = recoveryWait;
    return wait == 0 ? ackTimeout : Duration.ofNanos(wait);
  }

  private boolean streamAnswers(String destination) throws InterruptedException {
    try {
      JetStreamManagement jsm = connections.first().session().connection()
          .jetStreamManagement(JetStreamOptions.builder().requestTimeout(readyTimeout).build());
      String stream = streams.get(destination);
      if (stream == null) {
        List<String> names = jsm.getStreamNames(subjectOf(destination));
        if (names.isEmpty()) {
          return false;
        }
        stream = names.get(0);
      }
      ClusterInfo cluster = jsm.getStreamInfo(stream).getClusterInfo();
      return cluster == null || cluster.getLeader() != null;
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      return false;
    }
  }

  public List<SendOutcome> send(List<OutgoingMessage> messages, boolean stopAtFirstFailure)
      throws InterruptedException {
    try (JetStreamChannel channel = channel()) {
      return channel.send(messages, stopAtFirstFailure).outcomes();
    }
  }

  @Override
  public void close() {
    connections.close();
  }
}
