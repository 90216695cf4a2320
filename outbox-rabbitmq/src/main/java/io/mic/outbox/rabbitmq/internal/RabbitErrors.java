package io.mic.outbox.rabbitmq.internal;

import com.rabbitmq.client.AMQP;
import com.rabbitmq.client.Method;
import com.rabbitmq.client.Return;
import com.rabbitmq.client.ShutdownSignalException;
import io.mic.outbox.OutboxException;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Sorts what RabbitMQ answered into "the broker is not available for this" (no attempt is counted) or "the
 * broker refused this message" (an attempt is counted). The reasons are in {@code docs/rabbitmq.md}.
 *
 * <p>Unavailable: a nack, no confirm in time (unknown outcome), a closed connection or channel, a missing
 * exchange or a refused permission (configuration, not the event's fault), a blocked connection.
 * Rejected: a return (no queue bound for the routing key), a message the broker closed the channel for
 * ({@code PRECONDITION_FAILED}, e.g. larger than {@code max_message_size}), a message the client cannot
 * encode.
 */
public final class RabbitErrors {
  /** AMQP reply codes the classification looks at. */
  public static final int ACCESS_REFUSED = 403;
  public static final int NOT_FOUND = 404;
  /** The reply code of a channel the broker closed because of one message (e.g. too large). */
  public static final int PRECONDITION_FAILED = 406;

  private static final Pattern MESSAGE_SIZE = Pattern.compile("message size (\\d+)");

  private RabbitErrors() {}

  public static PublishUnavailableException nacked(String what) {
    return new PublishUnavailableException("RabbitMQ nacked " + what + ": the broker did not take it (a queue"
        + " at its max-length with overflow reject-publish, or a failed queue); the event waits without"
        + " counting an attempt");
  }

  public static PublishRejectedException returned(String what, Return r) {
    return new PublishRejectedException("RabbitMQ returned " + what + " as unroutable (" + r.getReplyCode()
        + " " + r.getReplyText() + "): no queue is bound for this routing key; bind one, or give the"
        + " exchange an alternate exchange", String.valueOf(r.getReplyCode()), null);
  }

  public static PublishUnavailableException timedOut(String what, Duration timeout) {
    return new PublishUnavailableException("no confirm for " + what + " within " + timeout + ": the outcome is"
        + " unknown, the event will be published again with the same message_id");
  }

  public static PublishUnavailableException blocked(String what, String reason) {
    return new PublishUnavailableException("RabbitMQ blocks publishing (" + reason + "), " + what + " not sent:"
        + " the broker has a memory or disk alarm; the event waits without counting an attempt");
  }

  public static PublishRejectedException refusedByClient(String what, String reason, Throwable cause) {
    return new PublishRejectedException("could not publish " + what + ": " + reason, null, cause);
  }

  /** The failure of a message that was outstanding, or not yet sent, when its channel closed. */
  public static OutboxException closed(String what, String exchange, ShutdownSignalException cause) {
    int code = replyCode(cause);
    if (!cause.isHardError() && code == NOT_FOUND) {
      return new PublishUnavailableException("exchange '" + exchange + "' does not exist, " + what
          + " not published (" + replyText(cause) + "): declare the exchange; events wait without counting"
          + " attempts", cause);
    }
    if (!cause.isHardError() && code == ACCESS_REFUSED) {
      return new PublishUnavailableException("RabbitMQ refused access for " + what + " (" + replyText(cause)
          + "): grant the user write permission on the exchange", cause);
    }
    return new PublishUnavailableException("the RabbitMQ " + (cause.isHardError() ? "connection" : "channel")
        + " closed before " + what + " was confirmed (" + replyText(cause) + "): the outcome is unknown, the"
        + " event will be published again", cause);
  }

  public static PublishRejectedException refusedByBroker(String what, ShutdownSignalException cause) {
    return new PublishRejectedException("RabbitMQ refused " + what + ": " + replyText(cause),
        String.valueOf(replyCode(cause)), cause);
  }

  /**
   * {@code true} when the broker closed the channel because of one message (406 PRECONDITION_FAILED, e.g.
   * a message larger than {@code max_message_size}): the others on the channel are not at fault.
   */
  public static boolean causedByOneMessage(ShutdownSignalException cause) {
    return !cause.isHardError() && !cause.isInitiatedByApplication()
        && replyCode(cause) == PRECONDITION_FAILED;
  }

  /**
   * The message the broker closed the channel for: the one whose body has the size the broker quotes
   * ("message size N is larger than …"), else the largest outstanding one.
   */
  public static <T> ConfirmChannel.Pending<T> culprit(ShutdownSignalException cause,
      List<ConfirmChannel.Pending<T>> lost) {
    Matcher m = MESSAGE_SIZE.matcher(replyText(cause));
    long size = m.find() ? Long.parseLong(m.group(1)) : -1;
    return lost.stream().filter(p -> p.bodySize() == size).findFirst()
        .orElseGet(() -> lost.stream().max(Comparator.comparingInt(ConfirmChannel.Pending::bodySize)).orElse(null));
  }

  public static int replyCode(ShutdownSignalException cause) {
    Close close = close(cause);
    return close != null ? close.code() : -1;
  }

  public static String replyText(ShutdownSignalException cause) {
    Close close = close(cause);
    if (close != null) {
      return close.text();
    }
    Throwable io = cause.getCause();
    return io != null ? io.toString() : cause.isInitiatedByApplication() ? "closed by the client" : "no reason given";
  }

  /** The broker's reply when it closed the channel or the connection; {@code null} for a lost connection. */
  private static Close close(ShutdownSignalException cause) {
    Method reason = cause.getReason();
    if (reason instanceof AMQP.Channel.Close c) {
      return new Close(c.getReplyCode(), c.getReplyText());
    }
    if (reason instanceof AMQP.Connection.Close c) {
      return new Close(c.getReplyCode(), c.getReplyText());
    }
    return null;
  }

  private record Close(int code, String text) {}
}
