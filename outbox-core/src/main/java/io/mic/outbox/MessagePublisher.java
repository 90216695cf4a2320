package io.mic.outbox;

import java.util.List;

/**
 * A broker's one way to send {@link OutgoingMessage}s, which every broker module's publisher implements: its
 * {@link BatchDispatchFn} sends live events through it, and the replay sends archived ones, so every option of
 * the publisher (connection, security, limits) applies to both.
 *
 * <pre>{@code
 * List<SendOutcome> outcomes = publisher.send(List.of(OutboxHeaders.messageOf(event)), false);
 * }</pre>
 */
public interface MessagePublisher extends AutoCloseable {

  /**
   * Sends the messages, in list order, and waits for the outcome of each.
   *
   * @param stopAtFirstFailure send nothing after a message that failed (a replay, which publishes in order):
   *     the messages not sent then fail as unavailable; messages already on their way are still waited for
   * @return one outcome per message, at the message's index
   * @throws PublishUnavailableException the broker is not reachable at all: nothing was sent
   */
  List<SendOutcome> send(List<OutgoingMessage> messages, boolean stopAtFirstFailure) throws InterruptedException;

  /**
   * Checks that the broker has a destination that takes messages for {@code destination} (a NATS stream that
   * captures the subject, a RabbitMQ exchange, a Kafka topic), e.g. before a replay; and learns its limits,
   * which {@link #check} then applies. The default checks nothing.
   *
   * @throws InvalidConfigurationException there is none: what is missing and how to create it
   * @throws PublishUnavailableException the broker cannot be asked
   */
  default void checkDestination(String destination) throws InterruptedException {}

  /**
   * Refuses, without sending it, a message the broker could never take (a header value it cannot carry, a size
   * over its limit); a replay checks every message this way before it publishes the first. The default accepts
   * every message.
   *
   * @throws PublishRejectedException what is wrong and the fix, never quoting the payload; the message says
   *     "cannot go to &lt;broker&gt;: …" and leaves out the event, which the caller names
   */
  default void check(OutgoingMessage message) {}

  /** Lets go of the connections the publisher opened. */
  @Override
  void close();
}
