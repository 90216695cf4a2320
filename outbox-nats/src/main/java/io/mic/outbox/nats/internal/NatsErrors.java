package io.mic.outbox.nats.internal;

import io.mic.outbox.OutboxException;
import io.mic.outbox.PublishUnavailableException;
import io.mic.outbox.nats.PublishRejectedException;
import io.nats.client.JetStreamApiException;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;

/**
 * Sorts a failed publication into "the broker is not available" (no attempt is counted) or "JetStream
 * refused this message" (an attempt is counted).
 *
 * <p>Unavailable: I/O errors and a closed connection, no responders (no stream captures the subject, or
 * JetStream is down: the client cannot tell them apart, and neither is the event's fault), no PubAck in
 * time (the outcome is unknown, so the event must be published again with the same {@code Nats-Msg-Id}),
 * server errors 5xx (storage or cluster unavailable, stream full with the discard-new policy), and
 * error 10060 (the subject is captured by a stream other than the expected one: a configuration
 * problem). Rejected: every other JetStream error (10054: message larger than the stream allows) and a
 * message the client refuses to build.
 */
public final class NatsErrors {
  /** JetStream API error: the subject is captured by another stream than {@code Nats-Expected-Stream}. */
  public static final int STREAM_NOT_MATCH = 10060;

  private NatsErrors() {}

  /** The exception to report for {@code error}, raised while publishing {@code what} (ids and subject). */
  public static OutboxException classify(Throwable error, String what, Duration ackTimeout) {
    Throwable t = unwrap(error);
    if (t instanceof TimeoutException) {
      return new PublishUnavailableException("no PubAck for " + what + " within " + ackTimeout
          + ": the outcome is unknown, the event will be published again with the same Nats-Msg-Id", t);
    }
    if (t instanceof CancellationException) {
      return new PublishUnavailableException("the publication of " + what + " was cancelled before its PubAck"
          + " arrived: the outcome is unknown", t);
    }
    if (t instanceof IOException && isNoResponders(t)) {
      return new PublishUnavailableException("no JetStream stream answered for " + what + ": create a stream"
          + " whose subjects include this subject (or check that JetStream is enabled); the event waits"
          + " without counting an attempt", t);
    }
    if (t instanceof IOException || t instanceof IllegalStateException) {
      return new PublishUnavailableException("NATS is not available for " + what + ": " + t.getMessage(), t);
    }
    if (t instanceof JetStreamApiException api) {
      if (api.getErrorCode() >= 500) {
        return new PublishUnavailableException("JetStream cannot store " + what + " now: "
            + api.getMessage(), t);
      }
      if (api.getApiErrorCode() == STREAM_NOT_MATCH) {
        return new PublishUnavailableException("the subject of " + what + " is not captured by the expected"
            + " stream: fix the stream's subjects or the publisher's expectedStream; " + api.getMessage(), t);
      }
      return new PublishRejectedException("JetStream rejected " + what + ": " + api.getMessage(),
          api.getApiErrorCode(), t);
    }
    if (t instanceof OutboxException known) {
      return known;
    }
    return new PublishRejectedException("could not publish " + what + ": " + t, -1, t);
  }

  private static boolean isNoResponders(Throwable t) {
    String message = t.getMessage();
    return message != null && message.contains("503") && message.contains("No Responders");
  }

  /** The client wraps the real cause in execution and runtime exceptions; peel them off. */
  private static Throwable unwrap(Throwable error) {
    Throwable t = error;
    while ((t instanceof ExecutionException || t instanceof CompletionException
        || (t != null && t.getClass() == RuntimeException.class)) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }
}
