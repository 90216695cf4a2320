package io.mic.outbox.kafka;

import io.mic.outbox.BatchDispatchFn;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.MessagePublisher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxHeaders;
import io.mic.outbox.OutgoingMessage;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.SendOutcome;
import io.mic.outbox.kafka.internal.KafkaErrors;
import io.mic.outbox.kafka.internal.ProducerSettings;
import io.mic.outbox.kafka.internal.ProducerRenewal;
import io.mic.outbox.kafka.internal.TopicCheck;
import io.mic.outbox.kafka.internal.TopicMetadata;
import io.mic.outbox.spi.BrokerProbe;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Publishes outbox events to Apache Kafka; use it as the dispatcher's {@code dispatchFn}.
 *
 * <pre>{@code
 * try (KafkaPublisher publisher = KafkaPublisher.builder()
 *     .bootstrapServers("127.0.0.1:9092")
 *     .property("linger.ms", "5")
 *     .build()) {
 *   OutboxDispatcher dispatcher = OutboxDispatcher.builder().store(store).dispatchFn(publisher).build();
 *   dispatcher.dispatchOnce();
 * }
 * }</pre>
 *
 * <p>Each event becomes one record: topic = the event's topic (or {@link Builder#topicOf}), key = the
 * aggregate id as UTF-8 (or {@link Builder#keyOf}), so all events of an aggregate land on one partition;
 * value = the JSON text as UTF-8; headers = the event's headers plus {@code x-event-id},
 * {@code x-aggregate-type} and {@code x-aggregate-id}, all UTF-8. An event counts as published only when
 * its send completed without error, that is with {@code acks=all} on every in-sync replica.
 *
 * <p>The producer is idempotent with {@code acks=all}; settings that would weaken ordering or durability
 * are refused by {@link Builder#build()} with {@link InvalidConfigurationException}.
 *
 * <p>Failures: {@link PublishUnavailableException} (no attempt counted) for retriable errors and unknown
 * outcomes (timeouts, not enough replicas, network, broker down, failed authentication);
 * {@link PublishRejectedException} (an attempt counted, then the DLQ) for a record too large, an invalid
 * topic, a missing authorization or a serialization error. After failed authentication or a fatal error of the
 * idempotent producer (fenced, out-of-order sequence, unsupported version, cluster authorization) the publisher's
 * own producer is closed and replaced by a new one (at most every {@link #PRODUCER_RENEWAL_INTERVAL}): such a
 * producer stops sending for good, even once the broker would accept it again.
 *
 * <p>Thread-safe. {@link #close()} closes the producer only if this publisher created it.
 */
public final class KafkaPublisher implements BatchDispatchFn, MessagePublisher, BrokerProbe {
  /** Default {@code delivery.timeout.ms}: the longest a send may take once accepted by the producer. */
  public static final Duration DEFAULT_DELIVERY_TIMEOUT = Duration.ofSeconds(20);
  /** Default {@code request.timeout.ms}: one request to a broker. */
  public static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(10);
  /** Default {@code max.block.ms}: how long {@code send} may wait for metadata or buffer space. */
  public static final Duration DEFAULT_MAX_BLOCK = Duration.ofSeconds(5);

  private static final Logger LOG = LoggerFactory.getLogger(KafkaPublisher.class);
  /** Added to the producer's own bounds before waiting on a future gives up: the producer should answer first. */
  private static final long WAIT_MARGIN_MILLIS = 5_000;
  /**
   * Topics of one batch whose metadata may be waited for in vain: after that many, Kafka counts as down if it
   * did not answer, and otherwise only events of topics the producer already knows are sent.
   */
  static final int MAX_TOPICS_WAITED_FOR = 2;
  /** How long the events of a topic Kafka said it does not have go back at once instead of waiting again. */
  public static final Duration MISSING_TOPIC_RECHECK = Duration.ofSeconds(30);
  /**
   * The shortest time between two replacements of the publisher's own producer after Kafka refused its
   * credentials or it hit a fatal error: such a producer stops sending for good, so it is replaced by a new one.
   */
  public static final Duration PRODUCER_RENEWAL_INTERVAL = Duration.ofSeconds(5);

  private final ProducerRenewal producer;
  private final Function<OutboxEvent, String> topicOf;
  private final Function<OutboxEvent, String> keyOf;
  private final long waitMillis;
  private final TopicMetadata metadata = new TopicMetadata(MISSING_TOPIC_RECHECK);
  private final TopicCheck topics;

  private KafkaPublisher(Builder b, Producer<byte[], byte[]> producer,
      Supplier<Producer<byte[], byte[]>> newProducer, long sendBoundMillis, TopicCheck topics) {
    this.producer = new ProducerRenewal(producer, newProducer, PRODUCER_RENEWAL_INTERVAL);
    this.topics = topics;
    this.topicOf = b.topicOf;
    this.keyOf = b.keyOf;
    this.waitMillis = sendBoundMillis + WAIT_MARGIN_MILLIS;
  }

  public static Builder builder() {
    return new Builder();
  }

  private OutgoingMessage messageOf(OutboxEvent event) {
    OutgoingMessage m = OutboxHeaders.messageOf(event);
    return new OutgoingMessage(topicOf.apply(event), keyOf.apply(event), m.headers(), m.payload(),
        m.deduplicationId(), m.createdAt());
  }

  /** Topic = destination, key and headers as UTF-8 (a null key: a record without one), value = the payload. */
  private static ProducerRecord<byte[], byte[]> recordOf(OutgoingMessage m) {
    RecordHeaders headers = new RecordHeaders();
    m.headers().forEach((name, value) -> headers.add(name, utf8(value)));
    return new ProducerRecord<>(m.destination(), null, m.key() == null ? null : utf8(m.key()), m.payload(),
        headers);
  }

  /**
   * Publishes one event and returns once Kafka acknowledged it.
   *
   * @throws PublishUnavailableException Kafka is not available, or the outcome is unknown
   * @throws PublishRejectedException Kafka refused this record
   */
  @Override
  public void dispatch(OutboxEvent event) throws InterruptedException {
    Exception failure = dispatchBatch(List.of(event)).get(event.id());
    if (failure != null) {
      throw (OutboxException) failure; // the only kind dispatchBatch reports
    }
  }

  /**
   * Sends the whole batch, flushes, and waits for every acknowledgement.
   *
   * @return the failure of each event that was not acknowledged, by id; absent = acknowledged
   */
  @Override
  public Map<UUID, Exception> dispatchBatch(List<OutboxEvent> events) throws InterruptedException {
    return SendOutcome.failuresOf(events, send(events.stream().map(this::messageOf).toList(), false));
  }

  /**
   * Sends the messages, flushes, and waits for every acknowledgement. Kafka reports most failures after the
   * flush: with {@code stopAtFirstFailure} only a failure known before a message is sent keeps it back.
   */
  @Override
  public List<SendOutcome> send(List<OutgoingMessage> messages, boolean stopAtFirstFailure)
      throws InterruptedException {
    Producer<byte[], byte[]> producer = this.producer.current();
    SendOutcome[] outcomes = new SendOutcome[messages.size()];
    int failed = 0;
    List<InFlight> inFlight = new ArrayList<>(messages.size());
    // send() waits max.block.ms for a topic's metadata. A topic waited for in vain is not tried again in this
    // batch; if Kafka answered meanwhile, the topic is missing and is not tried again for a while either. After
    // two such waits Kafka counts as down if it never answered; if it did, only known topics are sent.
    Map<String, PublishUnavailableException> downTopics = new HashMap<>();
    PublishUnavailableException down = null;
    int unanswered = 0;
    for (int i = 0; i < messages.size(); i++) {
      OutgoingMessage m = messages.get(i);
      String topic = m.destination();
      PublishUnavailableException known = down != null ? down : downTopics.get(topic);
      if (known == null && stopAtFirstFailure && failed > 0) {
        known = new PublishUnavailableException("not sent: an earlier message of this batch failed");
      }
      if (known == null) {
        known = metadata.stillMissing(topic, describe(m));
      }
      if (known == null && downTopics.size() >= MAX_TOPICS_WAITED_FOR && !metadata.isKnown(topic)) {
        known = new PublishUnavailableException(describe(m) + " not sent: this batch already waited in vain"
            + " for the metadata of " + downTopics.keySet() + "; it goes in a later batch");
      }
      if (known != null) {
        outcomes[i] = SendOutcome.failed(known);
        failed++;
        continue;
      }
      long sending = System.nanoTime();
      Future<RecordMetadata> sent;
      try {
        sent = send(producer, m);
      } catch (PublishRejectedException | PublishUnavailableException e) {
        outcomes[i] = SendOutcome.failed(e);
        failed++;
        if (e instanceof PublishUnavailableException closed) {
          down = closed; // the producer is closed: every later send fails alike
        }
        continue;
      }
      PublishUnavailableException immediate = failedAtOnce(m, sent);
      if (immediate == null) {
        metadata.known(topic);
        inFlight.add(new InFlight(i, m, sent));
        continue;
      }
      outcomes[i] = SendOutcome.failed(immediate);
      failed++;
      downTopics.put(topic, immediate);
      if (!metadata.rememberIfMissing(producer, topic, immediate, sending) && ++unanswered >= MAX_TOPICS_WAITED_FOR) {
        down = immediate;
      }
    }
    if (!inFlight.isEmpty()) {
      KafkaErrors.flush(producer);
    }
    for (InFlight f : inFlight) {
      try {
        await(f.message, f.sent);
        outcomes[f.index] = SendOutcome.ACKNOWLEDGED;
      } catch (PublishUnavailableException | PublishRejectedException e) {
        outcomes[f.index] = SendOutcome.failed(e);
        failed++;
      }
    }
    if (failed > 0) {
      LOG.debug("{} of {} events not acknowledged by Kafka", failed, messages.size());
      this.producer.report(producer, Arrays.stream(outcomes).map(o -> (Throwable) o.failure()).toList());
    }
    return Arrays.asList(outcomes);
  }

  /**
   * Checks that the topic exists, with an admin client on the publisher's own settings (security included), and
   * learns its {@code max.message.bytes} for {@link #check}. A publisher on the application's producer checks
   * nothing: it has no settings to ask with.
   */
  @Override
  public void checkDestination(String topic) throws InterruptedException {
    topics.checkTopic(topic);
  }

  /**
   * Refuses a record larger, in its own batch, than the producer's {@code max.request.size} or the topic's
   * {@code max.message.bytes} (after {@link #checkDestination}).
   */
  @Override
  public void check(OutgoingMessage message) {
    topics.checkSize(recordOf(message));
  }

  private Future<RecordMetadata> send(Producer<byte[], byte[]> producer, OutgoingMessage m)
      throws InterruptedException {
    try {
      return producer.send(recordOf(m));
    } catch (InterruptException e) {
      throw KafkaErrors.interrupted(e);
    } catch (KafkaException | IllegalStateException e) {
      // the producer reports most errors through the future; what it throws here is about the record
      // (serialization) or about the producer (closed)
      throw KafkaErrors.classify(e, describe(m));
    }
  }

  /** The unavailable outcome of a send that failed before it left the producer, else null. */
  private PublishUnavailableException failedAtOnce(OutgoingMessage m, Future<RecordMetadata> sent)
      throws InterruptedException {
    if (!sent.isDone()) {
      return null;
    }
    try {
      sent.get();
      return null;
    } catch (ExecutionException e) {
      return KafkaErrors.classify(e, describe(m)) instanceof PublishUnavailableException u ? u : null;
    }
  }

  private void await(OutgoingMessage m, Future<RecordMetadata> sent) throws InterruptedException {
    try {
      sent.get(waitMillis, TimeUnit.MILLISECONDS); // the producer itself fails it after delivery.timeout.ms
    } catch (ExecutionException e) {
      throw KafkaErrors.classify(e, describe(m));
    } catch (TimeoutException e) {
      throw new PublishUnavailableException("no answer from the Kafka producer for " + describe(m)
          + " within " + waitMillis + " ms: the outcome is unknown, the event will be published again", e);
    }
  }

  private static String describe(OutgoingMessage m) {
    return "event " + m.eventId() + " for topic '" + m.destination() + "'";
  }

  private static byte[] utf8(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Whether the producer holds a connection to a broker now; a dispatcher worker waiting out an outage asks it,
   * and resumes once it turns true.
   */
  @Override
  public boolean ready() {
    return producer.connected();
  }

  /** Closes the producer if this publisher created it (built with {@link Builder#bootstrapServers}). */
  @Override
  public void close() {
    producer.close(Duration.ofMillis(waitMillis));
  }

  private record InFlight(int index, OutgoingMessage message, Future<RecordMetadata> sent) {}

  /** Options of a {@link KafkaPublisher}; {@link #build()} validates them. */
  public static final class Builder {
    private Producer<byte[], byte[]> producer;
    private final Map<String, String> properties = new LinkedHashMap<>();
    private Function<OutboxEvent, String> topicOf = OutboxEvent::topic;
    private Function<OutboxEvent, String> keyOf = OutboxEvent::aggregateId;
    private Duration deliveryTimeout = DEFAULT_DELIVERY_TIMEOUT;
    private Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private Duration maxBlock = DEFAULT_MAX_BLOCK;

    private Builder() {}

    /** The brokers the publisher's own producer connects to, e.g. {@code 127.0.0.1:9092}. */
    public Builder bootstrapServers(String bootstrapServers) {
      return property(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers);
    }

    /**
     * Any producer setting for the publisher's own producer ({@code linger.ms}, {@code compression.type},
     * {@code security.protocol}, {@code sasl.jaas.config} …). Settings that break ordering or durability
     * ({@code acks} other than {@code all}, {@code enable.idempotence=false}, more than 5 in-flight
     * requests, {@code retries=0}, {@code transactional.id}) are refused by {@link #build()}.
     */
    public Builder property(String name, String value) {
      if (name == null || name.isBlank()) {
        throw new InvalidConfigurationException("property name must not be blank");
      }
      if (value == null) {
        throw new InvalidConfigurationException("property " + name + " must have a value");
      }
      properties.put(name.trim(), value);
      return this;
    }

    /**
     * Publish with the application's producer; the publisher never closes it. It must be configured as
     * {@link #build()} would configure its own ({@code acks=all}, idempotence on, at most 5 in-flight
     * requests, a delivery timeout well below the dispatcher's lease): the publisher cannot check it.
     */
    public Builder producer(Producer<byte[], byte[]> producer) {
      this.producer = producer;
      return this;
    }

    /** The Kafka topic of an event (default: the event's topic). */
    public Builder topicOf(Function<OutboxEvent, String> topicOf) {
      this.topicOf = topicOf;
      return this;
    }

    /**
     * The record key of an event, encoded as UTF-8 (default: the aggregate id). Events with equal keys
     * land on one partition, in order. Returning null sends the record without a key.
     */
    public Builder keyOf(Function<OutboxEvent, String> keyOf) {
      this.keyOf = keyOf;
      return this;
    }

    /**
     * {@code delivery.timeout.ms} (default 20 s): after it, a send fails as unavailable. Together with
     * {@link #maxBlock} it bounds one batch; keep the sum well below the dispatcher's {@code leaseTtl}
     * (default 60 s), or another worker may claim events whose publication is still running.
     */
    public Builder deliveryTimeout(Duration deliveryTimeout) {
      this.deliveryTimeout = deliveryTimeout;
      return this;
    }

    /** {@code request.timeout.ms} (default 10 s): one request to a broker, retried within the delivery timeout. */
    public Builder requestTimeout(Duration requestTimeout) {
      this.requestTimeout = requestTimeout;
      return this;
    }

    /** {@code max.block.ms} (default 5 s): how long {@code send} waits for metadata or buffer space. */
    public Builder maxBlock(Duration maxBlock) {
      this.maxBlock = maxBlock;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong and how to fix it */
    public KafkaPublisher build() {
      require(topicOf != null, "topicOf must not be null: leave it unset to use the event's topic");
      require(keyOf != null, "keyOf must not be null: leave it unset to key by aggregate id, or return null"
          + " from the function for records without a key");
      requireMillis("deliveryTimeout", deliveryTimeout);
      requireMillis("requestTimeout", requestTimeout);
      requireMillis("maxBlock", maxBlock);
      if (producer != null) {
        require(properties.isEmpty(), "set either producer or bootstrapServers/property, not both: the"
            + " settings " + properties.keySet() + " would not reach the application's producer");
        long bound = deliveryTimeout.toMillis() + maxBlock.toMillis();
        return new KafkaPublisher(this, producer, null, bound, TopicCheck.none());
      }
      Properties settings = ProducerSettings.of(properties, deliveryTimeout, requestTimeout, maxBlock);
      Supplier<Producer<byte[], byte[]>> newProducer = () -> new KafkaProducer<>(settings);
      Producer<byte[], byte[]> own;
      try {
        own = newProducer.get();
      } catch (KafkaException e) {
        // Kafka's messages hide password-type values; its reasons are in the causes, never echo the settings
        throw new InvalidConfigurationException("the Kafka producer could not be created: "
            + KafkaErrors.describe(e));
      }
      return new KafkaPublisher(this, own, newProducer, ProducerSettings.sendBoundMillis(settings),
          TopicCheck.with(settings));
    }

    private static void requireMillis(String option, Duration d) {
      require(d != null && d.toMillis() > 0 && d.toMillis() <= Integer.MAX_VALUE,
          option + " must be between 1 ms and " + Integer.MAX_VALUE + " ms, was " + d);
    }

    private static void require(boolean condition, String message) {
      if (!condition) {
        throw new InvalidConfigurationException(message);
      }
    }
  }
}
