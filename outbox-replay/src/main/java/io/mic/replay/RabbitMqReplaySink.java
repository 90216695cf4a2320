package io.mic.replay;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.rabbitmq.RabbitMqMessage;
import io.mic.outbox.rabbitmq.RabbitMqPublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Publishes a replay to a RabbitMQ exchange, which must exist; routing key = the topic.
 *
 * <pre>{@code
 * try (RabbitMqReplaySink sink = RabbitMqReplaySink.builder()
 *     .uri("amqp://guest:guest@127.0.0.1:5672").exchange("events").build()) {
 *   EventReplay.builder().source(source).topic("order.created").from(from).to(to).sink(sink).build().run();
 * }
 * }</pre>
 *
 * <p>It publishes through {@link RabbitMqPublisher}, so a replayed message is sent like a live one:
 * publisher confirms, {@code mandatory}, persistent, {@code content_type} {@code application/json},
 * {@code timestamp} = the original event's creation time; {@code message_id} =
 * {@code <original-id>:replay:<batch-id>} and the headers are the replay headers ({@code x-replay},
 * {@code x-replay-batch-id}, {@code x-original-event-id}, the aggregate headers, the original headers).
 * Messages go out in replay order on one channel, with up to {@link Builder#confirmWindow} awaiting their
 * confirm. The first message that is not confirmed stops the replay: a nack, no confirm in time, a closed
 * channel, or a {@code basic.return} (no queue bound for the routing key: an unroutable message is not
 * published). Messages in flight behind it may have been confirmed all the same; a resumed run with the same
 * batch id sends them again with the same {@code message_id}, and consumers deduplicate on it or on
 * {@code x-original-event-id}.
 */
public final class RabbitMqReplaySink implements ReplaySink {
  public static final int DEFAULT_CONFIRM_WINDOW = RabbitMqPublisher.DEFAULT_CONFIRM_WINDOW;
  public static final Duration DEFAULT_CONFIRM_TIMEOUT = RabbitMqPublisher.DEFAULT_CONFIRM_TIMEOUT;
  public static final Duration DEFAULT_CONNECT_TIMEOUT = RabbitMqPublisher.DEFAULT_CONNECT_TIMEOUT;
  public static final String CONNECTION_NAME = "mic-events-replay";

  private final RabbitMqPublisher publisher;
  private final String exchange;

  private RabbitMqReplaySink(RabbitMqPublisher publisher, String exchange) {
    this.publisher = publisher;
    this.exchange = exchange;
  }

  public static Builder builder() {
    return new Builder();
  }

  /** Connects and checks that the exchange exists. */
  @Override
  public void prepare(ReplayQuery query) {
    try {
      publisher.checkExchange();
    } catch (InvalidConfigurationException e) {
      throw new ReplayConfigurationException("exchange", e.getMessage());
    } catch (PublishUnavailableException e) {
      throw new ReplaySinkException(0, 0, e.getMessage(), null); // the publisher's messages never quote credentials
    }
  }

  /**
   * Refuses what the client could never send: a routing key (the topic), {@code message_id} or header name
   * over 255 bytes, headers that do not fit in one frame of the connection. A message over the broker's
   * {@code max_message_size} cannot be known in advance: the broker closes the channel and the replay stops.
   */
  @Override
  public void validate(ReplayMessage m) {
    try {
      publisher.check(messageOf(m));
    } catch (PublishRejectedException e) {
      throw new UnpublishableEventException("event " + m.event().id() + " cannot go to RabbitMQ: " + e.getMessage());
    } catch (PublishUnavailableException e) {
      throw new ReplaySinkException(0, 0, e.getMessage(), null);
    }
  }

  @Override
  public void publish(List<ReplayMessage> messages) throws InterruptedException {
    List<RabbitMqMessage> batch = new ArrayList<>(messages.size());
    messages.forEach(m -> batch.add(messageOf(m)));
    List<Exception> outcomes;
    try {
      outcomes = publisher.publishInOrder(batch);
    } catch (PublishUnavailableException e) {
      throw new ReplaySinkException(0, 0, e.getMessage(), e);
    }
    int first = -1;
    int acknowledgedAfter = 0;
    for (int i = 0; i < outcomes.size(); i++) {
      if (outcomes.get(i) != null && first < 0) {
        first = i;
      } else if (outcomes.get(i) == null && first >= 0) {
        acknowledgedAfter++;
      }
    }
    if (first >= 0) {
      Exception cause = outcomes.get(first);
      throw new ReplaySinkException(first, acknowledgedAfter, "event " + messages.get(first).event().id() + ": "
          + cause.getMessage(), cause);
    }
  }

  static RabbitMqMessage messageOf(ReplayMessage m) {
    return new RabbitMqMessage(m.subject(), m.msgId(), m.headers(), m.payloadBytes(), m.event().createdAt());
  }

  @Override
  public void close() {
    publisher.close();
  }

  @Override
  public String toString() {
    return "RabbitMQ exchange " + exchange;
  }

  /** Options of a {@link RabbitMqReplaySink}; {@link #build()} validates them. */
  public static final class Builder {
    private String uri;
    private String exchange;
    private int confirmWindow = DEFAULT_CONFIRM_WINDOW;
    private Duration confirmTimeout = DEFAULT_CONFIRM_TIMEOUT;
    private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;

    private Builder() {}

    /** Required: the broker, e.g. {@code amqp://guest:guest@127.0.0.1:5672}; never printed with its password. */
    public Builder uri(String uri) {
      this.uri = uri;
      return this;
    }

    /** Required: the exchange, which must exist (the replay never declares it). */
    public Builder exchange(String exchange) {
      this.exchange = exchange;
      return this;
    }

    /** At most this many messages wait for their confirm at once (default 256; 1 = one at a time). */
    public Builder confirmWindow(int confirmWindow) {
      this.confirmWindow = confirmWindow;
      return this;
    }

    /** How long to wait for each confirm (default 10 s); then the replay stops (the outcome is unknown). */
    public Builder confirmTimeout(Duration confirmTimeout) {
      this.confirmTimeout = confirmTimeout;
      return this;
    }

    /** How long connecting may take (default 2 s, as the live publisher). */
    public Builder connectTimeout(Duration connectTimeout) {
      this.connectTimeout = connectTimeout;
      return this;
    }

    /** @throws ReplayConfigurationException naming the option that is wrong */
    public RabbitMqReplaySink build() {
      if (uri == null) {
        throw new ReplayConfigurationException("uri", "uri is required, e.g. amqp://guest:guest@127.0.0.1:5672");
      }
      try {
        return new RabbitMqReplaySink(RabbitMqPublisher.builder().uri(uri).exchange(exchange)
            .confirmWindow(confirmWindow).confirmTimeout(confirmTimeout).connectTimeout(connectTimeout)
            .connectionName(CONNECTION_NAME).build(), exchange);
      } catch (InvalidConfigurationException e) {
        // the publisher's messages start with the option they are about, and never quote a password
        String option = e.getMessage().split("[ ]", 2)[0];
        throw new ReplayConfigurationException(option, e.getMessage());
      }
    }
  }
}
