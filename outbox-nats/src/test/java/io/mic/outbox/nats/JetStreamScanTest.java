package io.mic.outbox.nats;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.mic.outbox.BrokerScan;
import io.mic.outbox.OutboxHeaders;
import io.nats.client.Connection;
import io.nats.client.JetStreamManagement;
import io.nats.client.Nats;
import io.nats.client.api.StorageType;
import io.nats.client.api.StreamConfiguration;
import io.nats.client.impl.Headers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The JetStream scan on the shared NATS server, with a consumer the server throttles ({@code rate_limit_bps}):
 * a delivery that pauses is waited for, and one held back past the stall limit fails the scan instead of
 * leaving events out. The server lets a throttled consumer send a burst as large as the stream's largest
 * message, so the stream's messages are limited to 512 bytes: then it sends them one at a time.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class JetStreamScanTest {
  private static final String NATS = System.getenv().getOrDefault("MIC_TEST_NATS_URL", "nats://127.0.0.1:4222");
  private final String suffix = UUID.randomUUID().toString().replace("-", "").substring(0, 10);
  private final String stream = "SCAN_" + suffix;
  private final String topic = "scan" + suffix + ".created";
  private final String other = "scan" + suffix + ".cancelled";
  private Connection nats;
  private Instant from;

  @BeforeEach
  void connect() throws Exception {
    nats = Nats.connect(NATS);
    nats.jetStreamManagement().addStream(StreamConfiguration.builder().name(stream).subjects(topic, other)
        .storageType(StorageType.Memory).maximumMessageSize(512).build());
    from = Instant.EPOCH; // the stream is new: no clock is compared
  }

  @AfterEach
  void cleanUp() throws Exception {
    if (nats != null) {
      nats.jetStreamManagement().deleteStream(stream);
      nats.close();
    }
  }

  @Test
  void pausesInTheDeliveryAreNotTheEnd() throws Exception {
    Set<String> published = publish(4);
    // about 1 message of 400 bytes a second: pauses longer than the scan's poll of 500 ms
    JetStreamScan scan = new JetStreamScan(nats, stream, null, Duration.ofSeconds(20), c -> c.rateLimit(3_200));
    long t0 = System.nanoTime();
    assertThat(scan.eventIds(topic, from)).isEqualTo(published);
    assertThat(Duration.ofNanos(System.nanoTime() - t0)).as("the server did pause between the messages")
        .isGreaterThan(Duration.ofSeconds(2));
  }

  @Test
  void aLastMessageDeletedDuringTheScanEndsItAtTheOneBefore() throws Exception {
    List<String> published = new ArrayList<>();
    List<Long> sequences = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      String id = UUID.randomUUID().toString();
      sequences.add(nats.jetStream().publish(topic, new Headers().add(OutboxHeaders.EVENT_ID, id), body()).getSeqno());
      published.add(id);
    }
    // a stall limit shorter than the wait for a message that never comes: without the check, the scan fails
    JetStreamScan scan = new JetStreamScan(nats, stream, null, Duration.ofSeconds(3), c -> c.rateLimit(3_200));
    CompletableFuture<Set<String>> scanned = scanAsync(scan, topic);
    assertThat(nats.jetStreamManagement().deleteMessage(stream, sequences.get(3))).isTrue(); // e.g. aged out
    assertThat(scanned.get(30, TimeUnit.SECONDS)).containsExactlyInAnyOrderElementsOf(published.subList(0, 3));
  }

  @Test
  void aPrefixNamesTheSubjectAndAWrongOneFailsTheScan() throws Exception {
    String prefixed = "tenant" + suffix;
    nats.jetStreamManagement().updateStream(StreamConfiguration.builder().name(stream)
        .subjects(topic, other, prefixed + "." + topic).storageType(StorageType.Memory).maximumMessageSize(512)
        .build());
    String id = UUID.randomUUID().toString();
    nats.jetStream().publish(prefixed + "." + topic, new Headers().add(OutboxHeaders.EVENT_ID, id), body());
    assertThat(new JetStreamScan(nats, stream, prefixed).eventIds(topic, from)).containsExactly(id);
    assertThatThrownBy(() -> new JetStreamScan(nats, stream, "wrong" + suffix).eventIds(topic, from))
        .as("not an empty scan, which would report every event missing")
        .isInstanceOf(io.mic.outbox.InvalidConfigurationException.class)
        .hasMessageStartingWith("JetStream stream '" + stream + "' at nats://")
        .hasMessageContaining(" refuses to scan subject 'wrong" + suffix + "." + topic + "': ")
        .hasMessageEndingWith("[10093]");
  }

  @Test
  void aServerThatHoldsMessagesBackPastTheLimitFailsTheScan() throws Exception {
    publish(6);
    // 8 bytes a second: after the first message the next waits about a minute, far beyond a 2 s stall limit
    JetStreamScan scan = new JetStreamScan(nats, stream, null, Duration.ofSeconds(2), c -> c.rateLimit(64));
    assertThatThrownBy(() -> scan.eventIds(topic, from))
        .isInstanceOf(BrokerScan.ScanFailedException.class)
        .hasMessageStartingWith("the scan of JetStream stream " + stream + " stalled: ")
        .hasMessageContaining("message(s) of " + topic + " still on the server, none delivered for 2 s")
        .hasMessageEndingWith("; check the server's health and run reconcile again");
  }

  @Test
  void aSubjectWithoutMessagesSinceTheStartGivesNoIds() throws Exception {
    Set<String> published = publish(3);
    JetStreamScan scan = new JetStreamScan(nats, stream, null);
    assertThat(scan.eventIds(topic, Instant.now().plus(BrokerScan.CLOCK_MARGIN).plusSeconds(60))).isEmpty();
    assertThat(scan.eventIds(other, from)).as("no message of the subject at all").isEmpty();
    assertThat(scan.eventIds(topic, from)).isEqualTo(published);
  }

  @Test
  void aServerClockBehindTheDatabasesLosesNoMessageWithinTheMargin() throws Exception {
    String id = UUID.randomUUID().toString();
    long sequence = nats.jetStream().publish(topic, new Headers().add(OutboxHeaders.EVENT_ID, id), body()).getSeqno();
    Instant stamped = nats.jetStreamManagement().getMessage(stream, sequence).getTime().toInstant();
    // the event's created_at by the database's clock, which runs 30 s ahead of the server's
    Instant createdAt = stamped.plusSeconds(30);
    assertThat(new JetStreamScan(nats, stream, null).eventIds(topic, createdAt)).containsExactly(id);
  }

  @Test
  void messagesPublishedAfterTheStartAreLeftOutAndOtherSubjectsIgnored() throws Exception {
    Set<String> published = publish(3);
    nats.jetStream().publish(other, new Headers().add(OutboxHeaders.EVENT_ID, "of-another-subject"), new byte[1]);
    JetStreamScan scan = new JetStreamScan(nats, stream, null, Duration.ofSeconds(20), c -> c.rateLimit(3_200));
    CompletableFuture<Set<String>> scanned = scanAsync(scan, topic);
    // the scan has read where it ends: publish more while it runs
    Set<String> later = publish(2);
    assertThat(scanned.get(30, TimeUnit.SECONDS)).isEqualTo(published).doesNotContainAnyElementsOf(later);
  }

  @Test
  void aScanThatConnectsItselfReadsTheStreamAndClosesItsConnection() throws Exception {
    Set<String> published = publish(2);
    JetStreamScan scan = JetStreamScan.connect(NATS, stream, null);
    try (scan) {
      assertThat(scan.eventIds(topic, from)).isEqualTo(published);
    }
    assertThatThrownBy(() -> scan.eventIds(topic, from)).as("its connection is closed")
        .isInstanceOf(java.io.IOException.class).hasMessageContaining("close");
  }

  @Test
  void anUnreachableServerFailsTheConnectWithoutItsPassword() {
    assertThatThrownBy(() -> JetStreamScan.connect("nats://ops:s3cret@127.0.0.1:1", stream, null))
        .isInstanceOf(BrokerScan.ScanFailedException.class)
        .hasMessageStartingWith("cannot connect to NATS at nats://***@127.0.0.1:1: ")
        .hasMessageNotContaining("s3cret");
  }

  /** Publishes {@code n} messages of about 400 bytes, each with its event id, and returns the ids. */
  private Set<String> publish(int n) throws Exception {
    Set<String> ids = new HashSet<>();
    for (int i = 0; i < n; i++) {
      String id = UUID.randomUUID().toString();
      nats.jetStream().publish(topic, new Headers().add(OutboxHeaders.EVENT_ID, id), body());
      ids.add(id);
    }
    return ids;
  }

  private static byte[] body() {
    return ("{\"note\":\"" + "x".repeat(300) + "\"}").getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Starts {@code scan} in the background and returns once its consumer has delivered a message: the scan then
   * knows where it ends (it reads that before its first message).
   */
  private CompletableFuture<Set<String>> scanAsync(JetStreamScan scan, String subject) throws Exception {
    CompletableFuture<Set<String>> scanned = CompletableFuture.supplyAsync(() -> {
      try {
        return scan.eventIds(subject, from);
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    });
    JetStreamManagement jsm = nats.jetStreamManagement();
    await().atMost(Duration.ofSeconds(10)).until(() -> jsm.getConsumerNames(stream).stream()
        .anyMatch(name -> delivered(jsm, name) > 0));
    return scanned;
  }

  /** The stream sequence {@code consumer} delivered last; 0 when it is gone (an ordered consumer's reset). */
  private long delivered(JetStreamManagement jsm, String consumer) {
    try {
      return jsm.getConsumerInfo(stream, consumer).getDelivered().getStreamSequence();
    } catch (Exception e) {
      return 0;
    }
  }
}
