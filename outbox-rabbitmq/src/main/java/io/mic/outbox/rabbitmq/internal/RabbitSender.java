package io.mic.outbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.ShutdownSignalException;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutgoingMessage;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.SendOutcome;
import io.mic.outbox.rabbitmq.internal.ConfirmChannel.Pending;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Date;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.stream.IntStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one way messages go to a RabbitMQ exchange, for live events and replays alike: publisher confirms,
 * {@code mandatory}, persistent, {@code application/json}, {@code message_id} = the deduplication id, a bounded
 * window of outstanding confirms on one channel; a channel the broker closed because of one message is
 * replaced and the others are sent again on the fresh one.
 */
public final class RabbitSender implements AutoCloseable {
  private static final String CONTENT_TYPE = "application/json";
  /** Delivery mode 2: the broker writes the message to disk in durable queues. */
  private static final int PERSISTENT = 2;
  private static final int MAX_SHORT_STRING = 255;
  private static final Logger LOG = LoggerFactory.getLogger(RabbitSender.class);

  private final ChannelPool channels;
  private final String exchange;
  private final int confirmWindow;
  private final Duration confirmTimeout;

  public RabbitSender(ChannelPool channels, String exchange, int confirmWindow, Duration confirmTimeout) {
    this.channels = channels;
    this.exchange = exchange;
    this.confirmWindow = confirmWindow;
    this.confirmTimeout = confirmTimeout;
  }

  /** @throws PublishUnavailableException RabbitMQ is not reachable or blocks publishing: nothing was sent */
  public List<SendOutcome> send(List<OutgoingMessage> messages, boolean stopAtFirstFailure)
      throws InterruptedException {
    OutboxException[] failures = new OutboxException[messages.size()];
    String blocked = channels.blockedReason();
    if (blocked != null && !messages.isEmpty()) {
      throw RabbitErrors.blocked("the batch of " + messages.size() + " events", blocked);
    }
    List<Integer> todo = IntStream.range(0, messages.size()).boxed().toList();
    boolean first = true;
    while (!todo.isEmpty()) {
      ConfirmChannel channel;
      try {
        channel = channels.borrow();
      } catch (PublishUnavailableException e) {
        if (first) {
          throw e;
        }
        todo.forEach(i -> failures[i] = e);
        break;
      }
      first = false;
      try {
        todo = new Round(channel, messages, failures, stopAtFirstFailure).publish(todo);
      } finally {
        channels.giveBack(channel);
      }
    }
    return Arrays.stream(failures).map(f -> f == null ? SendOutcome.ACKNOWLEDGED : SendOutcome.failed(f)).toList();
  }

  /** Publications on one channel, and the failures they leave. */
  private final class Round {
    private final ConfirmChannel channel;
    private final List<OutgoingMessage> messages;
    private final OutboxException[] failures;
    private final boolean stopAtFirstFailure;

    Round(ConfirmChannel channel, List<OutgoingMessage> messages, OutboxException[] failures,
        boolean stopAtFirstFailure) {
      this.channel = channel;
      this.messages = messages;
      this.failures = failures;
      this.stopAtFirstFailure = stopAtFirstFailure;
    }

    /**
     * Publishes the messages at {@code todo} and records each failure.
     *
     * @return the messages to publish again on a fresh channel: the broker closed this one because of one
     *     message (now rejected), and the others it held, or that were not sent yet, are not at fault
     */
    List<Integer> publish(List<Integer> todo) throws InterruptedException {
      List<Pending<Integer>> sent = new ArrayList<>(todo.size());
      ArrayDeque<Pending<Integer>> window = new ArrayDeque<>();
      int next = 0;
      String blocked = null;
      boolean failed = false;
      for (; next < todo.size(); next++) {
        int i = todo.get(next);
        while (window.size() >= confirmWindow) {
          failed |= !(window.poll().await() instanceof ConfirmChannel.Acked);
        }
        if ((failed && stopAtFirstFailure) || channel.closedBy() != null) {
          break;
        }
        blocked = channels.blockedReason();
        if (blocked != null) {
          break;
        }
        OutgoingMessage m = messages.get(i); // taken when it goes: a caller's list may make it as late as that
        if (m.destination().getBytes(StandardCharsets.UTF_8).length > MAX_SHORT_STRING) {
          failures[i] = RabbitErrors.refusedByClient(describe(m), "a routing key must be 0 to 255 bytes of UTF-8",
              null);
          if (stopAtFirstFailure) {
            next++;
            break;
          }
          continue;
        }
        try {
          Pending<Integer> p = channel.publish(exchange, m.destination(), propertiesOf(m), m.payload(), i,
              confirmTimeout.toNanos());
          sent.add(p);
          window.add(p);
        } catch (ShutdownSignalException | IOException e) {
          break; // the channel is closing: this message and the rest were not sent
        } catch (RuntimeException e) {
          // the client failed mid-write: its sequence numbers may no longer match the broker's
          channel.spoil();
          failures[i] = RabbitErrors.refusedByClient(describe(m), e.toString(), e);
          next++;
          break;
        }
      }
      List<Integer> again = settle(sent, todo.subList(next, todo.size()), blocked);
      if (stopAtFirstFailure && !again.isEmpty()) {
        PublishUnavailableException notSent = new PublishUnavailableException(
            "not sent: an earlier message of this batch failed");
        again.stream().filter(i -> failures[i] == null).forEach(i -> failures[i] = notSent);
        return List.of();
      }
      return again;
    }

    /** Waits for the outcome of every message sent; returns what to send again on a fresh channel. */
    private List<Integer> settle(List<Pending<Integer>> sent, List<Integer> unsent, String blocked)
        throws InterruptedException {
      List<Pending<Integer>> lost = new ArrayList<>();
      ShutdownSignalException lostTo = null;
      for (Pending<Integer> p : sent) {
        ConfirmChannel.Outcome outcome = p.await();
        if (outcome instanceof ConfirmChannel.Closed closed) {
          lost.add(p);
          lostTo = closed.cause();
        } else {
          failures[p.item()] = failureOf(outcome, messages.get(p.item()));
        }
      }
      if (blocked != null) {
        // a blocked connection may still close, e.g. when the broker restarts: what it held was never confirmed
        failUnconfirmed(lost, lostTo);
        unsent.forEach(i -> failures[i] = RabbitErrors.blocked(describe(messages.get(i)), blocked));
        return List.of();
      }
      ShutdownSignalException cause = channel.closedBy();
      if (cause == null) {
        failUnconfirmed(lost, lostTo);
        return List.copyOf(unsent); // spoiled by the client: go on elsewhere
      }
      Pending<Integer> culprit = RabbitErrors.causedByOneMessage(cause) ? RabbitErrors.culprit(cause, lost) : null;
      if (culprit == null) {
        failUnconfirmed(lost, cause);
        unsent.forEach(i -> failures[i] = RabbitErrors.closed(describe(messages.get(i)), exchange, cause));
        return List.of();
      }
      OutgoingMessage bad = messages.get(culprit.item());
      failures[culprit.item()] = RabbitErrors.refusedByBroker(describe(bad), cause);
      if (stopAtFirstFailure) {
        failUnconfirmed(lost.stream().filter(p -> p != culprit).toList(), cause);
        return List.copyOf(unsent);
      }
      LOG.debug("RabbitMQ closed a channel because of event {}; publishing the other {} again", bad.eventId(),
          lost.size() - 1 + unsent.size());
      List<Integer> again = new ArrayList<>();
      lost.stream().filter(p -> p != culprit).forEach(p -> again.add(p.item()));
      again.addAll(unsent);
      return again;
    }

    /** Messages outstanding when their channel closed ({@code cause}): their outcome is unknown. */
    private void failUnconfirmed(List<Pending<Integer>> lost, ShutdownSignalException cause) {
      for (Pending<Integer> p : lost) {
        failures[p.item()] = RabbitErrors.closed(describe(messages.get(p.item())), exchange, cause);
      }
    }

    /**
     * The failure an outcome other than {@code Closed} stands for, {@code null} for an ack. A closed channel is
     * left to the caller: whose fault it was depends on the other messages outstanding on it.
     */
    private OutboxException failureOf(ConfirmChannel.Outcome outcome, OutgoingMessage m) {
      if (outcome instanceof ConfirmChannel.Returned r) {
        return RabbitErrors.returned(describe(m), r.message());
      }
      if (outcome instanceof ConfirmChannel.Nacked) {
        return RabbitErrors.nacked(describe(m));
      }
      if (outcome instanceof ConfirmChannel.TimedOut) {
        channel.spoil();
        return RabbitErrors.timedOut(describe(m), confirmTimeout);
      }
      return null;
    }
  }

  private static AMQP.BasicProperties propertiesOf(OutgoingMessage m) {
    Instant created = m.createdAt() != null ? m.createdAt() : Instant.now();
    return new AMQP.BasicProperties.Builder()
        .messageId(m.deduplicationId())
        .contentType(CONTENT_TYPE)
        .deliveryMode(PERSISTENT)
        .timestamp(Date.from(created))
        .headers(new LinkedHashMap<>(m.headers()))
        .build();
  }

  /** The event, the exchange and the routing key (cut at 40 characters when over AMQP's limit). */
  public String describe(OutgoingMessage m) {
    String key = m.destination();
    if (key.getBytes(StandardCharsets.UTF_8).length > MAX_SHORT_STRING) {
      key = key.substring(0, 40) + "…";
    }
    return "event " + m.eventId() + " to exchange '" + exchange + "' with routing key '" + key + "'";
  }

  public void checkExchange() {
    ConfirmChannel channel = channels.borrow();
    try {
      if (!channel.exchangeExists(exchange)) {
        throw new InvalidConfigurationException("exchange '" + exchange + "' does not exist at "
            + channels.displayUri() + ": declare it, or name an existing exchange (the publisher never declares one)");
      }
    } catch (IOException | ShutdownSignalException e) {
      ShutdownSignalException s = e instanceof ShutdownSignalException sse ? sse
          : e.getCause() instanceof ShutdownSignalException sse ? sse : null;
      throw new PublishUnavailableException("RabbitMQ at " + channels.displayUri() + " could not say whether"
          + " exchange '" + exchange + "' exists (" + (s != null ? RabbitErrors.replyText(s) : e.toString()) + ")", e);
    } finally {
      channels.giveBack(channel);
    }
  }

  public void check(OutgoingMessage m) {
    refuseLonger("the routing key", m.destination());
    refuseLonger("the message_id", m.deduplicationId());
    m.headers().keySet().forEach(name -> refuseLonger("a header name", name));
    long size;
    try {
      size = propertiesOf(m).toFrame(0, m.payload().length).size();
    } catch (IOException | IllegalArgumentException e) {
      throw cannotGo("its properties cannot be encoded: " + e.getMessage(), e);
    }
    int frameMax = frameMax();
    if (frameMax > 0 && size > frameMax) {
      throw cannotGo("its properties and headers take " + size + " bytes, over the connection's frame_max of "
          + frameMax + " bytes: shorten the headers or raise frame_max", null);
    }
  }

  private static void refuseLonger(String what, String value) {
    int bytes = value.getBytes(StandardCharsets.UTF_8).length;
    if (bytes > MAX_SHORT_STRING) {
      throw cannotGo(what + " is " + bytes + " bytes of UTF-8, over AMQP's 255", null);
    }
  }

  private static PublishRejectedException cannotGo(String reason, Throwable cause) {
    return new PublishRejectedException("cannot go to RabbitMQ: " + reason, null, cause);
  }

  private int frameMax() {
    ConfirmChannel channel = channels.borrow();
    try {
      return channel.connection().getFrameMax(); // a message's content header must fit in one frame
    } finally {
      channels.giveBack(channel);
    }
  }

  public String displayUri() {
    return channels.displayUri();
  }

  /** Whether a publication could go now: see {@link ChannelPool#ready()}. */
  public boolean ready() {
    return channels.ready();
  }

  @Override
  public void close() {
    channels.close();
  }
}
