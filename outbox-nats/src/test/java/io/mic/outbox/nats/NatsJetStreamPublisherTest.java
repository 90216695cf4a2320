package io.mic.outbox.nats;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.DispatchResult;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.nats.client.Connection;
import io.nats.client.JetStreamSubscription;
import io.nats.client.Message;
import io.nats.client.PullSubscribeOptions;
import io.nats.client.Subscription;
import io.nats.client.api.StreamInfo;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class NatsJetStreamPublisherTest {
  private Connection nats;
  private String stream;
  private final InMemoryOutboxStore store = new InMemoryOutboxStore();

  @BeforeEach
  void connect() throws Exception {
    nats = NatsTestServer.connect();
    stream = NatsTestServer.uniqueName();
  }

  @AfterEach
  void cleanUp() throws Exception {
    NatsTestServer.deleteStream(nats, stream);
    nats.close();
  }

  private NatsJetStreamPublisher publisher() {
    return NatsJetStreamPublisher.builder().connection(nats).build();
  }

  private OutboxEvent event(String topicSuffix, String payload) {
    return OutboxEvent.builder().aggregate("order", "42").topic(stream + "." + topicSuffix).payload(payload)
        .build();
  }

  private OutboxDispatcher dispatcher(NatsJetStreamPublisher publisher, int batchSize) {
    return OutboxDispatcher.builder().store(store).dispatchFn(publisher).batchSize(batchSize).build();
  }

  @Test
  void aConsumerReceivesTheTopicTheHeadersAndThePayloadBytes() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    String payload = "{\"city\":\"Zürich\",\"note\":\"日本語 ✓ \\\"quoted\\\"\",\"amount\":12.50}";
    OutboxEvent event = OutboxEvent.builder().aggregate("order", "A-7").topic(stream + ".order.created")
        .payload(payload).header("tenant", "acme").traceParent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").schemaVersion(2).build();

    publisher().dispatch(event);

    List<Message> received = readAll(1);
    Message m = received.get(0);
    assertThat(m.getSubject()).isEqualTo(stream + ".order.created");
    assertThat(m.getData()).isEqualTo(payload.getBytes(UTF_8));
    assertThat(m.getHeaders().getFirst("tenant")).isEqualTo("acme");
    assertThat(m.getHeaders().getFirst("traceparent")).isEqualTo("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    assertThat(m.getHeaders().getFirst("x-schema-version")).isEqualTo("2");
    assertThat(m.getHeaders().getFirst("x-event-id")).isEqualTo(event.id().toString());
    assertThat(m.getHeaders().getFirst("x-aggregate-type")).isEqualTo("order");
    assertThat(m.getHeaders().getFirst("x-aggregate-id")).isEqualTo("A-7");
    assertThat(m.getHeaders().getFirst("Nats-Msg-Id")).isEqualTo(event.id().toString());
    assertThat(m.getHeaders().keySet()).as("no sequence or time: the event never went through a store")
        .containsExactlyInAnyOrder("tenant", "traceparent", "x-event-id", "x-aggregate-type", "x-aggregate-id",
            "x-schema-version", "Nats-Msg-Id");
  }

  @Test
  void dispatchReturnsOnlyOnceTheStreamHoldsTheMessage() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    NatsJetStreamPublisher publisher = publisher();

    publisher.dispatch(event("a", "{\"n\":1}"));
    long afterFirst = streamInfo().getStreamState().getMsgCount();
    publisher.dispatch(event("a", "{\"n\":2}"));
    long afterSecond = streamInfo().getStreamState().getMsgCount();

    assertThat(afterFirst).isEqualTo(1);
    assertThat(afterSecond).isEqualTo(2);
  }

  @Test
  void aSubjectNoStreamCapturesFailsAsUnavailableAndCostsNoAttempt() throws Exception {
    OutboxEvent event = event("no.stream.here", "{}");  // the stream was never created

    assertThatThrownBy(() -> publisher().dispatch(event))
        .isInstanceOf(PublishUnavailableException.class)
        .hasMessage("no JetStream stream captures subject '" + stream + ".no.stream.here': create one whose"
            + " subjects include it, e.g. 'nats stream add EVENTS --subjects \"" + stream + ".no.stream.here\"' or,"
            + " in Java, jetStreamManagement.addStream(StreamConfiguration.builder().name(\"EVENTS\").subjects(\""
            + stream + ".no.stream.here\").build()) (or enable JetStream on the server: nats-server -js); event "
            + event.id() + " waits without counting an attempt");

    store.append(event);
    DispatchResult result = dispatcher(publisher(), 10).dispatchOnce();
    assertThat(result.released()).isEqualTo(1);
    assertThat(result.dispatched()).isZero();
    OutboxEvent stored = store.find(event.id()).orElseThrow();
    assertThat(stored.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(stored.attempts()).isZero();
  }

  @Test
  void theSameEventPublishedTwiceInsideTheDuplicateWindowIsStoredOnce() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c.duplicateWindow(Duration.ofMinutes(2)));
    OutboxEvent event = event("a", "{\"n\":1}");
    NatsJetStreamPublisher publisher = publisher();

    publisher.dispatch(event);
    publisher.dispatch(event);            // e.g. a crash after the PubAck, before the mark
    Map<UUID, Exception> failures = publisher.dispatchBatch(List.of(event, event));

    assertThat(failures).isEmpty();
    assertThat(streamInfo().getStreamState().getMsgCount()).isEqualTo(1);
  }

  @Test
  void aBatchOf500IsPublishedThroughTheWindowAndEveryEventIsMarked() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 500; i++) {
      events.add(event("batch", "{\"n\":" + i + "}"));
    }
    store.append(events);
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).maxPendingAcks(32)
        .build();

    DispatchResult result = dispatcher(publisher, 500).dispatchOnce();

    assertThat(result.dispatched()).isEqualTo(500);
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 500L)
        .containsEntry(OutboxStatus.PENDING, 0L);
    assertThat(streamInfo().getStreamState().getMsgCount()).isEqualTo(500);
    List<String> streamOrder = readAll(500).stream().map(m -> m.getHeaders().getFirst("x-event-id")).toList();
    assertThat(streamOrder).isEqualTo(events.stream().map(e -> e.id().toString()).toList());
  }

  @Test
  void aMessageTheStreamRefusesMidBatchCostsAnAttemptAndOnlyTheAcknowledgedAreMarked() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c.maximumMessageSize(1024));
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      String payload = i == 7 ? "{\"big\":\"" + "x".repeat(4000) + "\"}" : "{\"n\":" + i + "}";
      events.add(event("refuse", payload));
    }
    store.append(events);
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).maxPendingAcks(4)
        .build();

    DispatchResult result = dispatcher(publisher, 100).dispatchOnce();

    assertThat(result.dispatched()).isEqualTo(19);
    assertThat(result.retried()).isEqualTo(1);
    OutboxEvent refused = store.find(events.get(7).id()).orElseThrow();
    assertThat(refused.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(refused.attempts()).isEqualTo(1);
    assertThat(refused.lastError()).isEqualTo(PublishRejectedException.class.getName() + ": JetStream rejected"
        + " event " + refused.id() + " on subject '" + stream + ".refuse': message size exceeds maximum allowed"
        + " [10054]"); // said once, not again as a cause
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.DISPATCHED, 19L);
    assertThat(streamInfo().getStreamState().getMsgCount()).isEqualTo(19);
  }

  @Test
  void aRefusalCarriesTheJetStreamErrorCode() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c.maximumMessageSize(100));
    OutboxEvent big = event("a", "{\"big\":\"" + "x".repeat(200) + "\"}");

    assertThatThrownBy(() -> publisher().dispatch(big))
        .isInstanceOfSatisfying(PublishRejectedException.class, e -> assertThat(e.code()).isEqualTo("10054"))
        .hasMessage("JetStream rejected event " + big.id() + " on subject '" + stream
            + ".a': message size exceeds maximum allowed [10054]");
  }

  @Test
  void aSubjectOutsideTheStreamMidBatchIsReleasedWithoutAnAttempt() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    List<OutboxEvent> events = new ArrayList<>();
    for (int i = 0; i < 10; i++) {
      events.add(i == 4
          ? OutboxEvent.builder().aggregate("order", "42").topic("unbound" + stream + ".x").payload("{}").build()
          : event("bound", "{\"n\":" + i + "}"));
    }
    store.append(events);

    DispatchResult result = dispatcher(publisher(), 100).dispatchOnce();

    assertThat(result.dispatched()).isEqualTo(9);
    assertThat(result.released()).isEqualTo(1);
    OutboxEvent unbound = store.find(events.get(4).id()).orElseThrow();
    assertThat(unbound.status()).isEqualTo(OutboxStatus.PENDING);
    assertThat(unbound.attempts()).isZero();
    assertThat(streamInfo().getStreamState().getMsgCount()).isEqualTo(9);
  }

  @Test
  void anUnreachableServerFailsAsUnavailableAndTheBatchCostsNoAttempt() throws Exception {
    List<OutboxEvent> events = List.of(event("a", "{\"n\":1}"), event("a", "{\"n\":2}"));
    store.append(events);
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder()
        .url("nats://user:secret@127.0.0.1:1").connectTimeout(Duration.ofMillis(500)).build()) {

      assertThatThrownBy(() -> publisher.dispatch(events.get(0)))
          .isInstanceOf(PublishUnavailableException.class)
          .hasMessageStartingWith("cannot connect to NATS at nats://***@127.0.0.1:1 (")
          .hasMessageNotContaining("secret");

      DispatchResult result = dispatcher(publisher, 10).dispatchOnce();
      assertThat(result.released()).isEqualTo(2);
      assertThat(result.retried()).isZero();
    }
    for (OutboxEvent e : events) {
      OutboxEvent stored = store.find(e.id()).orElseThrow();
      assertThat(stored.status()).isEqualTo(OutboxStatus.PENDING);
      assertThat(stored.attempts()).isZero();
    }
  }

  @Test
  void aClosedApplicationConnectionIsReplacedByOneOfThePublishersOwn() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    Connection closed = NatsTestServer.connect();
    closed.close();
    try (NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(closed).build()) {
      publisher.dispatch(event("a", "{}")); // over a connection opened with the closed one's options
    }
    assertThat(streamInfo().getStreamState().getMsgCount()).isEqualTo(1);
    assertThat(closed.getStatus()).isEqualTo(Connection.Status.CLOSED);
  }

  @Test
  void noPubAckWithinTheTimeoutIsAnUnknownOutcomeReportedAsUnavailable() throws Exception {
    // a plain subscriber that never answers: the request is delivered, no PubAck ever comes back
    Subscription silent = nats.subscribe(stream + ".silent");
    nats.flush(Duration.ofSeconds(2));
    OutboxEvent event = event("silent", "{}");
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats)
        .ackTimeout(Duration.ofMillis(300)).build();

    assertThatThrownBy(() -> publisher.dispatch(event))
        .isInstanceOf(PublishUnavailableException.class)
        .hasMessage("no PubAck for event " + event.id() + " on subject '" + stream + ".silent' within PT0.3S:"
            + " the outcome is unknown, the event will be published again with the same Nats-Msg-Id");
    silent.unsubscribe();
  }

  @Test
  void aSubjectOfAnotherStreamThanTheExpectedOneIsAConfigurationProblem() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats)
        .expectedStream("SOME_OTHER_STREAM").build();

    assertThatThrownBy(() -> publisher.dispatch(event("a", "{}")))
        .isInstanceOf(PublishUnavailableException.class)
        .hasMessageContaining("is not captured by the expected stream")
        .hasMessageContaining("[10060]");
    assertThat(streamInfo().getStreamState().getMsgCount()).isZero();
  }

  @Test
  void theSubjectPrefixIsPrependedWithADot() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).subjectPrefix(stream)
        .expectedStream(stream).build();
    OutboxEvent event = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();

    publisher.dispatch(event);

    assertThat(publisher.subjectOf(event)).isEqualTo(stream + ".order.created");
    assertThat(readAll(1).get(0).getSubject()).isEqualTo(stream + ".order.created");
  }

  @Test
  void checkStreamsListsEverySubjectWithoutAStreamAndHowToCreateOne() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    NatsJetStreamPublisher publisher = publisher();

    publisher.checkStreams(List.of(stream + ".order.created", stream + ".order.paid"));
    assertThatThrownBy(() -> publisher.checkStreams(List.of(stream + ".order.created", "none" + stream + ".a",
        "none" + stream + ".b")))
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("no JetStream stream captures subjects 'none" + stream + ".a', 'none" + stream + ".b': create"
            + " one, e.g. 'nats stream add EVENTS --subjects \"none" + stream + ".a\" --subjects \"none" + stream
            + ".b\"' or, in Java, jetStreamManagement.addStream(StreamConfiguration.builder().name(\"EVENTS\")"
            + ".subjects(\"none" + stream + ".a\", \"none" + stream + ".b\").build())");
  }

  @Test
  void checkStreamsNamesSubjectsCapturedByAnotherStreamThanTheExpectedOne() throws Exception {
    NatsTestServer.createStream(nats, stream, c -> c);
    NatsJetStreamPublisher publisher = NatsJetStreamPublisher.builder().connection(nats).expectedStream("OTHER")
        .build();

    assertThatThrownBy(() -> publisher.checkStreams(List.of(stream + ".a")))
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("not captured by the expected stream 'OTHER': '" + stream + ".a' (captured by " + stream
            + "); add the subjects to 'OTHER' or change expectedStream");
  }

  @Test
  void buildNamesTheWrongOption() {
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("connection or url is required: .url(\"nats://127.0.0.1:4222\") or .connection(natsConnection)");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().url("nats://h:4222").connection(nats).build())
        .hasMessage("set either connection or url, not both: the publisher would not know which one to use");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().connection(nats).maxPendingAcks(0).build())
        .hasMessage("maxPendingAcks must be between 1 and 10000, was 0");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().connection(nats).ackTimeout(Duration.ZERO).build())
        .hasMessage("ackTimeout must be > 0, was PT0S");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().connection(nats).subjectPrefix("acme.").build())
        .hasMessage("subjectPrefix must be dot-separated tokens of letters, digits, '_' or '-' without a"
            + " trailing dot, e.g. 'acme.events', was 'acme.'");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().connection(nats).expectedStream("a.b").build())
        .hasMessage("expectedStream must be a stream name of letters, digits, '_' or '-', was 'a.b'");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().url("http://u:pw@host:4222").build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessageNotContaining("pw@");
  }

  @Test
  void aTimeoutTooLongToWaitForIsRefusedAtBuild() {
    // accepted, Long.MAX_VALUE ms made every batch fail with "long overflow" after sending: an attempt was counted
    // for events already in the stream, until the DLQ; a 30-day connect timeout never connected
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().connection(nats)
        .ackTimeout(Duration.ofMillis(Long.MAX_VALUE)).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("ackTimeout must be > 0 and at most PT1H, was PT2562047788015H12M55.807S");
    assertThatThrownBy(() -> NatsJetStreamPublisher.builder().url(NatsTestServer.url())
        .connectTimeout(Duration.ofDays(30)).build())
        .isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("connectTimeout must be > 0 and at most PT1H, was PT720H");
    assertThat(NatsJetStreamPublisher.builder().connection(nats).ackTimeout(Duration.ofHours(1))
        .build().subjectOf(event("a", "{}"))).isEqualTo(stream + ".a");
  }

  private StreamInfo streamInfo() throws Exception {
    return nats.jetStreamManagement().getStreamInfo(stream);
  }

  /** Reads the first {@code count} messages of the stream through a pull consumer, as an application would. */
  private List<Message> readAll(int count) throws Exception {
    JetStreamSubscription sub = nats.jetStream().subscribe(stream + ".>",
        PullSubscribeOptions.builder().stream(stream).build());
    List<Message> messages = new ArrayList<>();
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (messages.size() < count && System.nanoTime() < deadline) {
      for (Message m : sub.fetch(count - messages.size(), Duration.ofSeconds(1))) {
        m.ack();
        messages.add(m);
      }
    }
    sub.unsubscribe();
    assertThat(messages).hasSize(count);
    return messages;
  }
}
