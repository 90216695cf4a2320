package io.mic.outbox.nats.internal;

import io.mic.outbox.PublishUnavailableException;
import io.nats.client.JetStreamApiException;
import io.nats.client.JetStreamOptions;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Why nobody answered a publication on a subject ("no responders"), which the client cannot tell: no stream
 * captures the subject (create one), the stream that captures it has no leader (an election, a lost quorum, a
 * restart), or JetStream itself cannot say (no meta leader). It asks JetStream which streams capture the
 * subject, at most once per subject per {@link #REMEMBER}, so a batch of such failures asks once.
 */
final class NoResponders {
  static final Duration REMEMBER = Duration.ofSeconds(1);
  /** Subjects remembered at most; beyond, the memory starts over. */
  private static final int MAX_SUBJECTS = 1_000;

  private final ConnectionPool connections;
  private final Duration timeout;
  private final Map<String, Answer> recent = new ConcurrentHashMap<>();

  private record Answer(String text, long atNanos) {}

  NoResponders(ConnectionPool connections, Duration timeout) {
    this.connections = connections;
    this.timeout = timeout;
  }

  PublishUnavailableException explain(String subject, String id) {
    long now = System.nanoTime();
    Answer answer = recent.get(subject);
    if (answer == null || now - answer.atNanos() > REMEMBER.toNanos()) {
      if (recent.size() >= MAX_SUBJECTS) {
        recent.clear();
      }
      answer = new Answer(ask(subject), now);
      recent.put(subject, answer);
    }
    return new PublishUnavailableException(answer.text() + "; event " + id + " waits without counting an attempt",
        null);
  }

  private String ask(String subject) {
    List<String> streams;
    try {
      streams = connections.first().session().connection()
          .jetStreamManagement(JetStreamOptions.builder().requestTimeout(timeout).build()).getStreamNames(subject);
    } catch (IOException | JetStreamApiException | RuntimeException e) {
      return noAnswer(subject, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return noAnswer(subject, e);
    }
    if (streams.isEmpty()) {
      return NatsErrors.noStream(subject);
    }
    return "JetStream stream '" + String.join("', '", streams) + "' captures subject '" + subject + "' but did"
        + " not answer: the stream has no leader (a leader election, or a cluster that lost the quorum of its"
        + " replicas) or its server is starting up; nothing to create, check the servers and 'nats stream info "
        + streams.get(0) + "'";
  }

  private static String noAnswer(String subject, Exception e) {
    return "JetStream did not answer for subject '" + subject + "' and could not say which stream captures it ("
        + (NatsErrors.isNoResponders(e) ? "no responders" : e.getClass().getSimpleName()) + "): JetStream has no"
        + " leader (an election, or a cluster that lost its quorum), is starting up, or is not enabled; check"
        + " the servers before creating any stream";
  }
}
