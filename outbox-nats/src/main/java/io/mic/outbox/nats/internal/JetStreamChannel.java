package io.mic.outbox.nats.internal;

import io.mic.outbox.OutboxException;
import io.mic.outbox.OutgoingMessage;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.SendOutcome;
import io.mic.outbox.nats.internal.ConnectionSource.Session;
import io.nats.client.Connection;
import io.nats.client.api.PublishAck;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One sender's channel to JetStream: its batches share one connection and one window of outstanding PubAcks
 * while any of them waits for its PubAcks, so the next batch goes out while the last one's PubAcks arrive and
 * the window does not run dry between batches. The connection is let go once every batch sent was settled.
 * One thread uses a channel.
 *
 * <p>The window is settled oldest first, each wait bounded by the ack timeout counted from the publication. The
 * deadline is checked when the publication is settled, not by a timer per publication (a timer task each,
 * scheduled and cancelled on a shared scheduler, cost more CPU than the window's own work).
 */
public final class JetStreamChannel implements AutoCloseable {
  private final JetStreamSender sender;
  private ConnectionPool.Lease lease;
  private ArrayDeque<Publication> window;
  /** Batches sent and not yet settled (or failed to send). */
  private int unsettled;

  JetStreamChannel(JetStreamSender sender) {
    this.sender = sender;
  }

  /** A batch sent, whose PubAcks may still be arriving. */
  @FunctionalInterface
  public interface Sending {
    /**
     * Waits for the batch's PubAcks.
     *
     * @return one outcome per message, at its index
     * @throws OutboxException a failure of the whole batch, not of one message
     */
    List<SendOutcome> outcomes() throws InterruptedException;
  }

  /**
   * Sends every message, returning once each is on its way or failed.
   *
   * @param stopAtFirstFailure send nothing after a failure known by then: the rest fail as unavailable
   * @throws PublishUnavailableException NATS is not reachable at all: nothing was sent
   */
  public Sending send(List<OutgoingMessage> messages, boolean stopAtFirstFailure) throws InterruptedException {
    if (lease == null) {
      lease = sender.connections.lease();
      window = new ArrayDeque<>();
    }
    unsettled++;
    Batch batch;
    try {
      batch = new Batch(messages.size(), lease.source(), lease.source().session());
      sendAll(messages, batch, stopAtFirstFailure);
    } catch (InterruptedException | RuntimeException | Error e) {
      settled();
      throw e;
    }
    return () -> settle(batch);
  }

  private void sendAll(List<OutgoingMessage> messages, Batch batch, boolean stopAtFirstFailure)
      throws InterruptedException {
    PublishUnavailableException down = null;
    for (int i = 0; i < messages.size(); i++) {
      if (window.size() >= sender.maxPendingAcks) {
        settleOldest();
      }
      if (batch.fatal != null) {
        return; // not an outcome of a message: the batch stops, as from a direct publication
      }
      if (down == null && batch.failed > 0 && stopAtFirstFailure) {
        down = new PublishUnavailableException("not sent: an earlier message of this batch failed");
      }
      if (down == null && batch.failed > 0 && batch.session.connection().getStatus() != Connection.Status.CONNECTED) {
        down = new PublishUnavailableException("not sent: the NATS connection went down during this batch");
      }
      if (down != null) {
        batch.fail(i, down);
        continue;
      }
      try {
        CompletableFuture<PublishAck> ack = sender.publish(batch.session, messages.get(i));
        Duration wait = sender.ackWait();
        window.add(new Publication(i, messages.get(i), batch, ack, wait, System.nanoTime() + wait.toNanos()));
        batch.waiting++;
      } catch (PublishUnavailableException e) {
        batch.fail(i, e);
        down = e; // the client refused to send: the connection is closed, later messages would fail alike
      } catch (PublishRejectedException e) {
        batch.fail(i, e);
      }
    }
  }

  /** Waits for the batch's PubAcks, settling the window oldest first: an earlier batch's come before. */
  private List<SendOutcome> settle(Batch batch) throws InterruptedException {
    if (batch.settled) {
      throw new IllegalStateException("the outcomes of a batch can be asked for once");
    }
    batch.settled = true;
    try {
      while (batch.waiting > 0) {
        if (window.isEmpty()) {
          throw new IllegalStateException(batch.waiting + " publications of the batch are not in its window");
        }
        settleOldest();
      }
    } finally {
      settled();
    }
    if (batch.acks == 0 && batch.timeouts > 0) {
      batch.source.recover(batch.session, sender.probeTimeout);
    }
    if (batch.fatal != null) {
      throw batch.fatal;
    }
    return Arrays.asList(batch.outcomes);
  }

  private void settled() {
    if (--unsettled == 0) {
      letGo();
    }
  }

  /** Gives the connection back and drops the window: what is left in it is nobody's outcome any more. */
  private void letGo() {
    lease.close();
    lease = null;
    window = null;
  }

  @Override
  public void close() {
    if (lease != null) {
      unsettled = 0;
      letGo();
    }
  }

  /**
   * A publication in the window, its batch, how long it waits for its PubAck and the {@link System#nanoTime()} by
   * which that must come.
   */
  private record Publication(int index, OutgoingMessage message, Batch batch, CompletableFuture<PublishAck> ack,
      Duration ackWait, long deadline) {}

  /**
   * Waits for the oldest publication's PubAck (or its failure) and settles it into its batch; a channel that
   * sends its next batch before the last one is settled settles that one this way, up to its last publication.
   * Interrupted, the publication stays in the window, unsettled.
   */
  private void settleOldest() throws InterruptedException {
    Publication p = window.peek();
    if (p == null) {
      return;
    }
    PublishAck ack = null;
    Throwable cause = null;
    try {
      ack = p.ack().get(Math.max(0, p.deadline() - System.nanoTime()), TimeUnit.NANOSECONDS);
    } catch (TimeoutException e) {
      cause = new TimeoutException("no PubAck within " + p.ackWait().toMillis() + " ms");
    } catch (ExecutionException e) {
      cause = e.getCause();
      while (cause.getClass() == RuntimeException.class && cause.getCause() != null) {
        cause = cause.getCause(); // the client wraps its checked exceptions
      }
    }
    window.poll();
    p.batch().waiting--;
    if (cause == null) {
      p.batch().outcomes[p.index()] = sender.acknowledged(p.message(), ack);
      p.batch().acks++;
      return;
    }
    OutboxException failure = sender.classify(cause, p.message(), p.ackWait());
    if (failure instanceof NatsErrors.NoPubAck) {
      p.batch().timeouts++;
    } else if (!(failure instanceof PublishUnavailableException || failure instanceof PublishRejectedException)) {
      p.batch().fatal = failure; // not an outcome of this message: the batch fails as a whole
      return;
    }
    p.batch().fail(p.index(), failure);
  }

  private static final class Batch {
    final ConnectionSource source;
    final Session session;
    final SendOutcome[] outcomes;
    int failed;
    int acks;
    int timeouts;
    int waiting;
    OutboxException fatal;
    boolean settled;

    Batch(int size, ConnectionSource source, Session session) {
      this.outcomes = new SendOutcome[size];
      this.source = source;
      this.session = session;
    }

    void fail(int index, OutboxException failure) {
      outcomes[index] = SendOutcome.failed(failure);
      failed++;
    }
  }
}
