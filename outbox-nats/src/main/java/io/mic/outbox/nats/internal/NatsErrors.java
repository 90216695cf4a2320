package io.mic.outbox.nats.internal;

import io.mic.outbox.OutboxException;
import io.mic.outbox.PublishRejectedException;
import io.mic.outbox.PublishUnavailableException;
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
 * its stream has no leader: the client cannot tell them apart, {@code NoResponders} asks JetStream which; neither
 * is the event's fault), no PubAck in
 * time (the outcome is unknown, so the event must be published again with the same {@code Nats-Msg-Id}),
 * server errors 5xx (storage or cluster unavailable, stream full with the discard-new policy), and
 * error 10060 (the subject is captured by a stream other than the expected one: a configuration
 * problem). Rejected: every other JetStream error (10054: message larger than the stream allows) and a
 * message the client refuses to build.
 *
 * <p>A message quotes its cause's text or carries the cause, never both: the stored error lists the causes,
 * and the same text twice helps nobody.
 */
public final class NatsErrors {
  /** JetStream API error: the subject is captured by another stream than {@code Nats-Expected-Stream}. */
  public static final int STREAM_NOT_MATCH = 10060;

  private NatsErrors() {}

  /** No PubAck within the ack timeout: unavailable, and a sign the connection may be dead. */
  public static final class NoPubAck extends PublishUnavailableException {
    private static final long serialVersionUID = 1L;

    NoPubAck(String message) {
      super(message);
    }
  }

  public static OutboxException classify(Throwable error, String id, String subject, Duration ackTimeout) {
    String what = "event " + id + " on subject '" + subject + "'";
    Throwable t = unwrap(error);
    if (t instanceof TimeoutException) {
      return new NoPubAck("no PubAck for " + what + " within " + ackTimeout
          + ": the outcome is unknown, the event will be published again with the same Nats-Msg-Id");
    }
    if (t instanceof CancellationException) {
      // the client's own limit for a reply (5 s, publishAsync takes no timeout) or its connection closing:
      // a missing PubAck like any other, so a connection that carries nothing is still found and replaced
      return new NoPubAck("no PubAck for " + what + ": the NATS client stopped waiting (" + t.getMessage()
          + "); the outcome is unknown, the event will be published again with the same Nats-Msg-Id");
    }
    if (t instanceof IOException && isNoResponders(t)) {
      return new PublishUnavailableException(noStream(subject) + "; event " + id + " waits without counting an"
          + " attempt", null);
    }
    if (t instanceof IOException || t instanceof IllegalStateException) {
      return new PublishUnavailableException("NATS is not available for " + what + ": " + t.getMessage(), null);
    }
    if (t instanceof JetStreamApiException api) {
      if (api.getErrorCode() >= 500) {
        return new PublishUnavailableException("JetStream cannot store " + what + " now: " + api.getMessage(),
            null);
      }
      if (api.getApiErrorCode() == STREAM_NOT_MATCH) {
        return new PublishUnavailableException("the subject of " + what + " is not captured by the expected"
            + " stream: fix the stream's subjects or the publisher's expectedStream; " + api.getMessage(), null);
      }
      return new PublishRejectedException("JetStream rejected " + what + ": " + api.getMessage(),
          String.valueOf(api.getApiErrorCode()), null);
    }
    if (t instanceof OutboxException known) {
      return known;
    }
    return new PublishRejectedException("could not publish " + what + ": " + t, null, null);
  }

  /** What to do when no stream captures {@code subject}. */
  public static String noStream(String subject) {
    return "no JetStream stream captures subject '" + subject + "': create one whose subjects include it, e.g."
        + " 'nats stream add EVENTS --subjects \"" + subject + "\"' or, in Java,"
        + " jetStreamManagement.addStream(StreamConfiguration.builder().name(\"EVENTS\").subjects(\""
        + subject + "\").build()) (or enable JetStream on the server: nats-server -js)";
  }

  /** Whether a publication failed with "no responders", once the client's wrappers are peeled off. */
  public static boolean isNoRespondersFailure(Throwable error) {
    Throwable t = unwrap(error);
    return t instanceof IOException && isNoResponders(t);
  }

  /** The client's "no responders" error: nobody listens on the subject (no stream, or JetStream disabled). */
  public static boolean isNoResponders(Throwable t) {
    String message = t.getMessage();
    return message != null && message.contains("503") && message.contains("No Responders");
  }

  /**
   * Why {@code Nats.connect} failed, without the URL: the client's message and exception quote the URL with
   * its password, so only the root cause is reported ("no server answered" when there is none).
   */
  public static String connectFailure(IOException e) {
    Throwable root = rootOfConnectFailure(e);
    return root == null ? "no server answered" : root.toString();
  }

  /** The root cause of a failed {@code Nats.connect} or JetStream call, or {@code null} when the client gives none. */
  public static Throwable rootOfConnectFailure(Throwable e) {
    Throwable root = e;
    while (root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    return root == e ? null : root;
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
