package io.mic.outbox.nats;

import io.mic.outbox.BrokerScan;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.nats.internal.NatsErrors;
import io.mic.outbox.nats.internal.Urls;
import io.nats.client.Connection;
import io.nats.client.ErrorListener;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.Nats;
import io.nats.client.Options;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.DeliverPolicy;
import io.nats.client.api.MessageInfo;
import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.UnaryOperator;

/**
 * Scans a JetStream stream with an ordered consumer from a start time ({@link BrokerScan#CLOCK_MARGIN} early)
 * and collects the {@code x-event-id} headers of one subject (the topic, after an optional prefix), up to the
 * last message at the start of the scan. Nothing is acknowledged or changed on the server.
 *
 * <p>The scan ends at the subject's last message at its start (at the last one left, should that one be
 * deleted meanwhile), never at a pause in the delivery. A server that holds messages back for longer than the
 * stall limit fails the scan, rather than leave events out of it (they would be reported as missing on the
 * broker).
 *
 * <pre>{@code
 * try (JetStreamScan scan = JetStreamScan.connect("nats://127.0.0.1:4222", "ORDERS", null)) {
 *   Set<String> ids = scan.eventIds("order.created", from);
 * }
 * }</pre>
 */
public final class JetStreamScan implements BrokerScan, AutoCloseable {
  /** How long {@link #connect} waits for the server. */
  public static final Duration CONNECT_TIMEOUT = Duration.ofSeconds(5);
  /** How long the scan waits for a message before it checks that the message it ends at still exists. */
  private static final Duration POLL = Duration.ofMillis(500);
  /** How long the scan waits without a message while the server still holds some. */
  static final Duration STALL_LIMIT = Duration.ofSeconds(30);
  private static final int NO_MESSAGE_FOUND = io.nats.client.api.Error.JsNoMessageFoundErr.getApiErrorCode();
  private static final int STREAM_NOT_FOUND = 10059;

  private final Connection connection;
  private final boolean owned;
  private final String stream;
  private final String subjectPrefix;
  private final Duration stallLimit;
  private final UnaryOperator<ConsumerConfiguration.Builder> consumer;

  /**
   * Scans over the application's connection, which {@link #close()} leaves open.
   *
   * @param subjectPrefix the publisher's subject prefix, or {@code null}
   */
  public JetStreamScan(Connection connection, String stream, String subjectPrefix) {
    this(connection, false, stream, subjectPrefix, STALL_LIMIT, b -> b);
  }

  /** With another stall limit, and settings added to the scan's consumer (a consumer that delivers slowly). */
  JetStreamScan(Connection connection, String stream, String subjectPrefix, Duration stallLimit,
      UnaryOperator<ConsumerConfiguration.Builder> consumer) {
    this(connection, false, stream, subjectPrefix, stallLimit, consumer);
  }

  private JetStreamScan(Connection connection, boolean owned, String stream, String subjectPrefix,
      Duration stallLimit, UnaryOperator<ConsumerConfiguration.Builder> consumer) {
    this.connection = connection;
    this.owned = owned;
    this.stream = stream;
    this.subjectPrefix = subjectPrefix == null ? "" : subjectPrefix + ".";
    this.stallLimit = stallLimit;
    this.consumer = consumer;
  }

  /**
   * Connects to {@code url} (one attempt, no reconnection: a scan that loses its server fails) for a scan
   * that {@link #close()} disconnects.
   *
   * @param subjectPrefix the publisher's subject prefix, or {@code null}
   * @throws ScanFailedException no server answered; the message shows the URL without its credentials
   */
  public static JetStreamScan connect(String url, String stream, String subjectPrefix) throws InterruptedException {
    Options options = new Options.Builder().server(url).connectionTimeout(CONNECT_TIMEOUT).maxReconnects(0)
        .errorListener(new ErrorListener() {}) // the client's default prints on stderr; a failure is thrown
        .build();
    try {
      return new JetStreamScan(Nats.connect(options), true, stream, subjectPrefix, STALL_LIMIT, b -> b);
    } catch (IOException e) {
      throw new ScanFailedException("cannot connect to NATS at " + Urls.redact(url) + ": "
          + NatsErrors.connectFailure(e), NatsErrors.rootOfConnectFailure(e));
    }
  }

  /**
   * @throws InvalidConfigurationException the stream does not exist, or does not capture the subject
   * @throws ScanFailedException the server held messages back past the stall limit
   */
  @Override
  public Set<String> eventIds(String topic, Instant from) throws Exception {
    String subject = subjectPrefix + topic;
    Set<String> ids = new HashSet<>();
    Instant start = from.minus(CLOCK_MARGIN); // the messages' times are the server's clock, from is the database's
    ConsumerConfiguration cc = consumer.apply(ConsumerConfiguration.builder().deliverPolicy(DeliverPolicy.ByStartTime)
        .startTime(start.atZone(ZoneOffset.UTC))).build();
    // first: the server refuses a subject outside the stream (a wrong prefix), which must not read as "none"
    JetStreamSubscription sub = subscribe(subject, cc);
    try {
      long last = lastOf(subject, start); // the scan ends there: messages published after its start are left out
      long received = 0; // the stream sequence of the last message that arrived
      long quietSince = System.nanoTime();
      while (last > received) {
        Message m = sub.nextMessage(POLL);
        if (m == null) {
          if (!exists(last)) { // deleted or aged out meanwhile: end at the subject's last message now
            last = lastOf(subject, start);
            quietSince = System.nanoTime();
          } else if (System.nanoTime() - quietSince > stallLimit.toNanos()) {
            throw new ScanFailedException("the scan of JetStream stream " + stream + " stalled: "
                + pending(sub) + " message(s) of " + subject + " still on the server, none delivered for "
                + stallLimit.toSeconds() + " s; check the server's health and run reconcile again", null);
          }
          continue; // a pause in the delivery, not the end
        }
        quietSince = System.nanoTime();
        received = m.metaData().streamSequence();
        String id = m.getHeaders() == null ? null : m.getHeaders().getFirst(OutboxHeaders.EVENT_ID);
        if (id != null && received <= last) {
          ids.add(id);
        }
      }
      return ids;
    } finally {
      try {
        sub.unsubscribe();
      } catch (RuntimeException e) {
        // the connection is gone: the server drops the ordered consumer by itself
      }
    }
  }

  /**
   * An ordered consumer of {@code subject} on the stream.
   *
   * @throws InvalidConfigurationException the stream does not exist, or the server refuses the subject: the
   *     message names the stream, the subject and the server
   */
  private JetStreamSubscription subscribe(String subject, ConsumerConfiguration cc) throws Exception {
    try {
      return connection.jetStream().subscribe(subject,
          PushSubscribeOptions.builder().stream(stream).ordered(true).configuration(cc).build());
    } catch (JetStreamApiException e) {
      String server = Urls.redact(connection.getConnectedUrl());
      throw new InvalidConfigurationException(e.getApiErrorCode() == STREAM_NOT_FOUND
          ? "JetStream stream '" + stream + "' does not exist at " + server + ": name the stream that captures"
              + " subject '" + subject + "'"
          : "JetStream stream '" + stream + "' at " + server + " refuses to scan subject '" + subject + "': "
              + e.getMessage());
    }
  }

  /** The stream sequence of the subject's last message, or 0 when it has none at or after {@code start}. */
  private long lastOf(String subject, Instant start) throws Exception {
    MessageInfo newest = found(() -> connection.jetStreamManagement().getLastMessage(stream, subject));
    return newest == null || newest.getTime().toInstant().isBefore(start) ? 0 : newest.getSeq();
  }

  private boolean exists(long sequence) throws Exception {
    return found(() -> connection.jetStreamManagement().getMessage(stream, sequence)) != null;
  }

  /** The message {@code get} reads, or {@code null} when the server has no such message. */
  private static MessageInfo found(Callable<MessageInfo> get) throws Exception {
    try {
      return get.call();
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() == NO_MESSAGE_FOUND) {
        return null;
      }
      throw e;
    }
  }

  private static String pending(JetStreamSubscription sub) {
    try {
      return Long.toString(sub.getConsumerInfo().getNumPending());
    } catch (Exception e) {
      return "an unknown number of"; // the server does not answer that either
    }
  }

  @Override
  public String toString() {
    return "JetStream stream " + stream;
  }

  /** Disconnects the connection {@link #connect} opened; leaves the application's open. */
  @Override
  public void close() throws InterruptedException {
    if (owned) {
      connection.close();
    }
  }
}
