package io.mic.replay;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.MessagePublisher;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.SendOutcome;
import java.util.List;

/**
 * Publishes a replay through a broker's publisher ({@code NatsJetStreamPublisher}, {@code RabbitMqPublisher},
 * {@code KafkaPublisher}), the same send path as live dispatch, so every option of the publisher (connection,
 * security, limits) applies to the replay too. The sink never closes the publisher: its owner does.
 *
 * <pre>{@code
 * try (NatsJetStreamPublisher nats = NatsJetStreamPublisher.builder().url("nats://127.0.0.1:4222")
 *     .expectedStream("ORDERS").build()) {
 *   EventReplay.builder().source(source).topic("order.created").from(from).to(to)
 *       .sink(PublisherSink.of(nats)).build().run();
 * }
 * }</pre>
 *
 * <p>Messages go out in replay order; at the first one that is not acknowledged the publisher sends nothing
 * more, and the sink reports it with what was acknowledged behind it (messages already in flight). A resumed
 * run with the same batch id sends them again under the same deduplication id.
 */
public final class PublisherSink implements ReplaySink {
  /** The {@link ReplayConfigurationException#option()} of a destination that does not exist. */
  public static final String DESTINATION = "destination";

  private final MessagePublisher publisher;
  private long duplicates;

  private PublisherSink(MessagePublisher publisher) {
    this.publisher = publisher;
  }

  public static PublisherSink of(MessagePublisher publisher) {
    if (publisher == null) {
      throw new ReplayConfigurationException("publisher", "publisher is required: a broker's publisher, e.g."
          + " NatsJetStreamPublisher.builder().url(\"nats://127.0.0.1:4222\").expectedStream(\"ORDERS\").build()");
    }
    return new PublisherSink(publisher);
  }

  @Override
  public void prepare(ReplayQuery query) throws InterruptedException {
    try {
      publisher.checkDestination(query.topic());
    } catch (ReplayConfigurationException e) {
      throw e;
    } catch (InvalidConfigurationException e) {
      throw new ReplayConfigurationException(DESTINATION, e.getMessage());
    } catch (PublishUnavailableException e) {
      throw new ReplaySinkException(0, 0, e.getMessage(), null);
    }
  }

  /** Refuses what the publisher says its broker can never take. */
  @Override
  public void validate(ReplayMessage m) {
    try {
      publisher.check(m.outgoing());
    } catch (PublishRejectedException e) {
      throw new UnpublishableEventException("event " + m.event().id() + " " + e.getMessage());
    } catch (PublishUnavailableException e) {
      throw new ReplaySinkException(0, 0, e.getMessage(), null); // the check had to connect, and could not
    }
  }

  @Override
  public void publish(List<ReplayMessage> messages) throws InterruptedException {
    List<SendOutcome> outcomes;
    try {
      outcomes = publisher.send(messages.stream().map(ReplayMessage::outgoing).toList(), true);
    } catch (PublishUnavailableException e) {
      throw new ReplaySinkException(0, 0, e.getMessage(), e.getCause());
    }
    int first = -1;
    int acknowledgedAfter = 0;
    for (int i = 0; i < outcomes.size(); i++) {
      SendOutcome o = outcomes.get(i);
      if (o.status() == SendOutcome.Status.DUPLICATE) {
        duplicates++;
      }
      if (!o.delivered() && first < 0) {
        first = i;
      } else if (o.delivered() && first >= 0) {
        acknowledgedAfter++;
      }
    }
    if (first >= 0) {
      Exception failure = outcomes.get(first).failure();
      throw new ReplaySinkException(first, acknowledgedAfter, failure.getMessage(), failure.getCause());
    }
  }

  @Override
  public long duplicates() {
    return duplicates;
  }
}
