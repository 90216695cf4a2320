package io.mic.outbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Channel;
import com.rabbitmq.client.Connection;
import com.rabbitmq.client.Return;
import com.rabbitmq.client.ShutdownSignalException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One channel in confirm mode, used by one publishing thread at a time, and the messages on it that await
 * their confirm. The broker's answers arrive on the connection's thread: a {@code basic.return} for a
 * message precedes its {@code basic.ack}, so a returned message is settled as returned, never as a
 * success. A closed channel settles everything still outstanding with the close reason.
 */
final class ConfirmChannel {
  /** What the broker said about one message. */
  public sealed interface Outcome {}

  public record Acked() implements Outcome {}

  public record Nacked() implements Outcome {}

  public record Returned(Return message) implements Outcome {}

  public record Closed(ShutdownSignalException cause) implements Outcome {}

  public record TimedOut() implements Outcome {}

  /** A message sent on this channel, waiting for its outcome; {@code T} is what the caller sent it for. */
  public static final class Pending<T> {
    private final long seq;
    private final T item;
    private final String messageId;
    private final int bodySize;
    private final long deadline;
    private final CompletableFuture<Outcome> outcome = new CompletableFuture<>();
    private volatile Return returned;

    Pending(long seq, T item, String messageId, int bodySize, long deadline) {
      this.seq = seq;
      this.item = item;
      this.messageId = messageId;
      this.bodySize = bodySize;
      this.deadline = deadline;
    }

    public T item() {
      return item;
    }

    public int bodySize() {
      return bodySize;
    }

    /** The outcome, waiting at most until this message's confirm deadline. */
    public Outcome await() throws InterruptedException {
      try {
        return outcome.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
      } catch (TimeoutException e) {
        outcome.complete(new TimedOut());
        return outcome.join(); // a confirm may have won the race
      } catch (ExecutionException e) {
        throw new IllegalStateException("outcomes never complete exceptionally", e);
      }
    }

    boolean settle(Outcome o) {
      return outcome.complete(o);
    }
  }

  private final Connection connection;
  private final Channel channel;
  private final ConcurrentNavigableMap<Long, Pending<?>> outstanding = new ConcurrentSkipListMap<>();
  private final Object lock = new Object();
  private ShutdownSignalException closedBy; // guarded by lock
  private boolean spoiled;

  private ConfirmChannel(Connection connection, Channel channel) {
    this.connection = connection;
    this.channel = channel;
  }

  static ConfirmChannel open(Connection connection) throws IOException {
    Channel channel = connection.createChannel();
    if (channel == null) {
      throw new IOException("the connection has no free channel number (channel_max reached)");
    }
    ConfirmChannel c = new ConfirmChannel(connection, channel);
    channel.addConfirmListener((tag, multiple) -> c.settle(tag, multiple, false),
        (tag, multiple) -> c.settle(tag, multiple, true));
    channel.addReturnListener(c::returned);
    channel.addShutdownListener(c::closed);
    channel.confirmSelect();
    return c;
  }

  Connection connection() {
    return connection;
  }

  /**
   * Sends one mandatory message; its {@link Pending} completes with the broker's answer.
   *
   * @throws ShutdownSignalException the channel is already closed: nothing was sent
   * @throws IOException the client could not write the message; the channel is closing
   */
  public <T> Pending<T> publish(String exchange, String routingKey, AMQP.BasicProperties properties, byte[] body,
      T item, long confirmTimeoutNanos) throws IOException {
    Pending<T> p;
    synchronized (lock) {
      if (closedBy != null) {
        throw closedBy;
      }
      long seq = channel.getNextPublishSeqNo();
      p = new Pending<>(seq, item, properties.getMessageId(), body.length, System.nanoTime() + confirmTimeoutNanos);
      outstanding.put(seq, p);
    }
    channel.basicPublish(exchange, routingKey, true, properties, body);
    return p;
  }

  /**
   * Whether {@code exchange} exists (a passive declare). A missing exchange is a channel error: the broker
   * closes this channel, so it is never reused.
   *
   * @throws IOException the broker could not be asked, or refused for another reason (see the cause)
   */
  public boolean exchangeExists(String exchange) throws IOException {
    try {
      channel.exchangeDeclarePassive(exchange);
      return true;
    } catch (IOException e) {
      if (e.getCause() instanceof ShutdownSignalException s && !s.isHardError()
          && RabbitErrors.replyCode(s) == RabbitErrors.NOT_FOUND) {
        return false;
      }
      throw e;
    }
  }

  /** Why the broker or the client closed this channel, or {@code null} while it is open. */
  public ShutdownSignalException closedBy() {
    synchronized (lock) {
      return closedBy;
    }
  }

  /**
   * Marks the channel unfit for reuse (a confirm timed out, or the client failed mid-publish and the
   * sequence numbers may no longer match the broker's): it is closed instead of pooled.
   */
  public void spoil() {
    spoiled = true;
  }

  boolean reusable() {
    return !spoiled && closedBy() == null && channel.isOpen() && outstanding.isEmpty();
  }

  /** Closes the channel without waiting; outstanding messages are settled as closed. */
  void abort() {
    try {
      channel.abort();
    } catch (IOException | RuntimeException e) {
      // already closed, or the connection is gone: nothing left to release
    }
  }

  private void settle(long tag, boolean multiple, boolean nack) {
    Collection<Pending<?>> done = multiple ? outstanding.headMap(tag, true).values() : single(tag);
    for (Pending<?> p : new ArrayList<>(done)) {
      outstanding.remove(p.seq);
      Return r = p.returned;
      p.settle(nack ? new Nacked() : r != null ? new Returned(r) : new Acked());
    }
  }

  private List<Pending<?>> single(long tag) {
    Pending<?> p = outstanding.get(tag);
    return p == null ? List.of() : List.of(p);
  }

  private void returned(Return r) {
    String id = r.getProperties() == null ? null : r.getProperties().getMessageId();
    for (Pending<?> p : outstanding.values()) { // in publish order: returns arrive in that order too
      if (p.returned == null && p.messageId != null && p.messageId.equals(id)) {
        p.returned = r;
        return;
      }
    }
  }

  private void closed(ShutdownSignalException cause) {
    synchronized (lock) {
      closedBy = cause;
    }
    for (Pending<?> p : new ArrayList<>(outstanding.values())) {
      outstanding.remove(p.seq);
      p.settle(new Closed(cause));
    }
  }
}
