package io.mic.outbox.cli.reconcile;

import io.mic.outbox.OutboxHeaders;
import io.nats.client.Connection;
import io.nats.client.JetStream;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PushSubscribeOptions;
import io.nats.client.api.ConsumerConfiguration;
import io.nats.client.api.DeliverPolicy;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashSet;
import java.util.Set;

/**
 * Scans a JetStream stream with an ordered consumer from a start time and collects the {@code x-event-id}
 * headers of one subject (the topic, after an optional prefix), up to the last message at the start of the
 * scan. Nothing is acknowledged or changed on the server.
 */
public final class JetStreamScan implements BrokerScan {
  private static final Duration IDLE = Duration.ofSeconds(5);

  private final Connection connection;
  private final String stream;
  private final String subjectPrefix;

  /** @param subjectPrefix the publisher's subject prefix, or {@code null} */
  public JetStreamScan(Connection connection, String stream, String subjectPrefix) {
    this.connection = connection;
    this.stream = stream;
    this.subjectPrefix = subjectPrefix == null ? "" : subjectPrefix + ".";
  }

  @Override
  public Set<String> eventIds(String topic, Instant from) throws Exception {
    String subject = subjectPrefix + topic;
    long last = connection.jetStreamManagement().getStreamInfo(stream).getStreamState().getLastSequence();
    Set<String> ids = new HashSet<>();
    if (last == 0) {
      return ids;
    }
    JetStream js = connection.jetStream();
    ConsumerConfiguration cc = ConsumerConfiguration.builder().deliverPolicy(DeliverPolicy.ByStartTime)
        .startTime(from.atZone(ZoneOffset.UTC)).build();
    JetStreamSubscription sub = js.subscribe(subject,
        PushSubscribeOptions.builder().stream(stream).ordered(true).configuration(cc).build());
    try {
      while (true) {
        Message m = sub.nextMessage(IDLE);
        if (m == null) {
          return ids; // nothing more within the idle time: the scan reached the end
        }
        String id = m.getHeaders() == null ? null : m.getHeaders().getFirst(OutboxHeaders.EVENT_ID);
        if (id != null) {
          ids.add(id);
        }
        if (m.metaData().streamSequence() >= last || m.metaData().pendingCount() == 0) {
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
}
