package io.mic.outbox.cli.reconcile;

import io.mic.outbox.OutboxHeaders;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.DeliverPolicy;
import io.nats.client.api.MessageInfo;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashSet;
import java.util.Set;
import java.util.function.UnaryOperator;

/**
 * Scans a JetStream stream with an ordered consumer from a start time and collects the {@code x-event-id}
 * headers of one subject (the topic, after an optional prefix), up to the last message at the start of the
 * scan. Nothing is acknowledged or changed on the server.
 *
 * <p>The scan ends at the subject's last message at its start, never at a pause in the delivery. A server that
 * holds messages back for longer than the stall limit fails the scan, rather than leave events out of it
 * (they would be reported as missing on the broker).
 */
public final class JetStreamScan implements BrokerScan {
  /** How long the scan waits for a message before it asks the server whether more are coming. */
  private static final Duration POLL = Duration.ofMillis(500);
  /** How long the scan waits without a message while the server still holds some. */
  static final Duration STALL_LIMIT = Duration.ofSeconds(30);
  /** JetStream's error code for "no message found". */
  private static final int NO_MESSAGE_FOUND = 10037;

  private final Connection connection;
  private final String stream;
  private final String subjectPrefix;
  private final Duration stallLimit;
  private final UnaryOperator<ConsumerConfiguration.Builder> consumer;

  /** @param subjectPrefix the publisher's subject prefix, or {@code null} */
  public JetStreamScan(Connection connection, String stream, String subjectPrefix) {
    this(connection, stream, subjectPrefix, STALL_LIMIT, b -> b);
  }

  /** With another stall limit, and settings added to the scan's consumer (a consumer that delivers slowly). */
  JetStreamScan(Connection connection, String stream, String subjectPrefix, Duration stallLimit,
      UnaryOperator<ConsumerConfiguration.Builder> consumer) {
    this.connection = connection;
    this.stream = stream;
    this.subjectPrefix = subjectPrefix == null ? "" : subjectPrefix + ".";
    this.stallLimit = stallLimit;
    this.consumer = consumer;
  }

  @Override
  public Set<String> eventIds(String topic, Instant from) throws Exception {
    String subject = subjectPrefix + topic;
    Set<String> ids = new HashSet<>();
    MessageInfo newest;
    try {
      newest = connection.jetStreamManagement().getLastMessage(stream, subject);
    } catch (JetStreamApiException e) {
      if (e.getApiErrorCode() == NO_MESSAGE_FOUND) {
        return ids; // the subject has no message in the stream
      }
      throw e;
    }
    if (newest.getTime().toInstant().isBefore(from)) {
      return ids; // nothing of the subject since from
    }
    long last = newest.getSeq(); // the scan ends there: messages published after its start are left out
    JetStream js = connection.jetStream();
    ConsumerConfiguration cc = consumer.apply(ConsumerConfiguration.builder().deliverPolicy(DeliverPolicy.ByStartTime)
        .startTime(from.atZone(ZoneOffset.UTC))).build();
    JetStreamSubscription sub = js.subscribe(subject,
        PushSubscribeOptions.builder().stream(stream).ordered(true).configuration(cc).build());
    try {
      long quietSince = System.nanoTime();
      while (true) {
        Message m = sub.nextMessage(POLL);
        if (m == null) {
          if (System.nanoTime() - quietSince > stallLimit.toNanos()) {
            throw new JetStreamScanException("the scan of JetStream stream " + stream + " stalled: "
                + sub.getConsumerInfo().getNumPending() + " message(s) of " + subject + " still on the server,"
                + " none delivered for " + stallLimit + "; check the server's health and run reconcile again");
          }
          continue; // a pause in the delivery, not the end: the end is the subject's last message
        }
        quietSince = System.nanoTime();
        String id = m.getHeaders() == null ? null : m.getHeaders().getFirst(OutboxHeaders.EVENT_ID);
        if (id != null) {
          ids.add(id);
        }
        if (m.metaData().streamSequence() >= last) {
          return ids;
        }
      }
    } finally {
      sub.unsubscribe();
    }
  }

  @Override
  public String toString() {
    return "JetStream stream " + stream;
  }

  /** The stream could not be read to its end; the message names the stream, the subject and what to do. */
  public static final class JetStreamScanException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    JetStreamScanException(String message) {
      super(message);
    }
  }
}
