package io.mic.replay;

import io.mic.outbox.archive.ArchivedEvent;
import io.mic.outbox.archive.Timestamps;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Republishes the archived events of one topic and an inclusive time range, in {@code (created_at, id)}
 * order. Replay is separate from transactional dispatch: it never touches an outbox table.
 *
 * <pre>{@code
 * try (NatsJetStreamPublisher nats = NatsJetStreamPublisher.builder().url("nats://127.0.0.1:4222")
 *     .expectedStream("ORDERS").build()) {
 *   ReplaySink sink = PublisherSink.of(nats);
 *   ReplayResult result = EventReplay.builder()
 *       .source(JsonArchiveSource.of(Path.of("archive.jsonl.gz")))
 *       .topic("order.created")
 *       .from(Instant.parse("2026-09-29T08:00:00Z"))
 *       .to(Instant.parse("2026-09-29T10:00:00Z"))
 *       .sink(sink)
 *       .batchId("rebuild-2026-09-29")   // optional; a random UUID otherwise
 *       .build()
 *       .run();
 * }
 * }</pre>
 *
 * <p>Every message carries {@code x-replay: true}, {@code x-replay-batch-id}, {@code x-original-event-id}
 * and {@code Nats-Msg-Id = <original-id>:replay:<batch-id>} (see {@link ReplayMessage}). The first
 * publication that fails stops the replay with a {@link ReplayPublishException} that says how many events
 * were published and which one was not; running the same replay again with the same batch id resumes it
 * (the prefix is republished, and deduplicated by JetStream inside its duplicate window). Delivery stays
 * at-least-once: consumers deduplicate on {@code x-original-event-id}.
 */
public final class EventReplay {
  public static final int CHUNK_SIZE = 1000;

  private static final Pattern TOPIC = Pattern.compile("[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*");
  private static final Pattern BATCH_ID = Pattern.compile("[A-Za-z0-9_.-]{1,64}");

  private final ReplaySource source;
  private final ReplayQuery query;
  private final ReplaySink sink;
  private final String batchId;
  private final ReplayProgress progress;

  private EventReplay(Builder b) {
    this.source = b.source;
    this.query = new ReplayQuery(b.topic, b.from, b.to);
    this.sink = b.sink;
    this.batchId = b.batchId != null ? b.batchId : UUID.randomUUID().toString();
    this.progress = b.progress;
  }

  public static Builder builder() {
    return new Builder();
  }

  public String batchId() {
    return batchId;
  }

  public ReplayQuery query() {
    return query;
  }

  /**
   * Runs the replay on the calling thread. The sink is prepared, used and left open: its owner closes it.
   *
   * @throws ReplayPublishException a publication failed: how far the replay got
   * @throws UnpublishableEventException an event the sink can never take: nothing was published
   */
  public ReplayResult run() throws InterruptedException {
    long start = System.nanoTime();
    long duplicatesBefore = sink.duplicates(); // a sink may serve several runs
    Counter counter = new Counter(progress);
    try {
      sink.prepare(query);
    } catch (ReplaySinkException e) {
      throw new ReplayPublishException(e.getMessage() + "; nothing was published", 0, null, batchId, e);
    }
    // every selected event is checked against the sink before the first one is published
    EventCheck check = sink.isDryRun() ? EventCheck.NONE : e -> sink.validate(ReplayMessage.of(e, batchId));
    try (ReplayCursor cursor = source.open(query, counter, check)) {
      List<ReplayMessage> chunk = new ArrayList<>(CHUNK_SIZE);
      for (ArchivedEvent e = next(cursor, counter); e != null; e = next(cursor, counter)) {
        chunk.add(ReplayMessage.of(e, batchId));
        if (chunk.size() == CHUNK_SIZE) {
          publish(chunk, counter);
        }
      }
      publish(chunk, counter);
    }
    return new ReplayResult(batchId, counter.read, counter.published, sink.isDryRun(),
        Duration.ofNanos(System.nanoTime() - start), sink.duplicates() - duplicatesBefore);
  }

  /** Reads on; an archive error after some publications says how far the replay got. */
  private ArchivedEvent next(ReplayCursor cursor, Counter counter) {
    try {
      return cursor.next();
    } catch (ReplayInputException e) {
      if (counter.published == 0) {
        throw e;
      }
      throw new ReplayInputException(e.getMessage() + " (" + counter.published + " events of batch " + batchId
          + " were published before this error)", e);
    }
  }

  private void publish(List<ReplayMessage> chunk, Counter counter) throws InterruptedException {
    if (chunk.isEmpty()) {
      return;
    }
    try {
      sink.publish(chunk);
    } catch (ReplaySinkException e) {
      long published = counter.published + e.failedIndex();
      ArchivedEvent first = chunk.get(e.failedIndex()).event();
      String also = e.acknowledgedAfter() == 0 ? "" : "; " + e.acknowledgedAfter() + " later events were"
          + " acknowledged too (they were in flight) and a resumed batch republishes them under the same"
          + " Nats-Msg-Id";
      throw new ReplayPublishException(e.getMessage() + "; published " + published + " events in order before"
          + " it; first unpublished event: " + first.id() + " (created_at " + Timestamps.format(first.createdAt()) + ")" + also,
          published, first.id(), batchId, e);
    }
    counter.published += chunk.size();
    progress.published(counter.published);
    chunk.clear();
  }

  private static final class Counter implements ReplayProgress {
    private final ReplayProgress delegate;
    long read;
    long published;

    Counter(ReplayProgress delegate) {
      this.delegate = delegate;
    }

    @Override
    public void read(long records, long selected) {
      read = records;
      delegate.read(records, selected);
    }
  }

  public static final class Builder {
    private ReplaySource source;
    private String topic;
    private Instant from;
    private Instant to;
    private ReplaySink sink;
    private String batchId;
    private ReplayProgress progress = ReplayProgress.NONE;

    private Builder() {}

    public Builder source(ReplaySource source) {
      this.source = source;
      return this;
    }

    /** Required: the topic to replay; it is also the subject. */
    public Builder topic(String topic) {
      this.topic = topic;
      return this;
    }

    /** Required: the first instant of the range, inclusive. */
    public Builder from(Instant from) {
      this.from = from;
      return this;
    }

    /** Required: the last instant of the range, inclusive. */
    public Builder to(Instant to) {
      this.to = to;
      return this;
    }

    /** Required: where to publish; {@link DryRunSink} to only list what would be published. */
    public Builder sink(ReplaySink sink) {
      this.sink = sink;
      return this;
    }

    /** The batch id (letters, digits, '_', '.', '-'; at most 64); set the previous one to resume a batch. */
    public Builder batchId(String batchId) {
      this.batchId = batchId;
      return this;
    }

    public Builder progress(ReplayProgress progress) {
      this.progress = progress;
      return this;
    }

    public EventReplay build() {
      require(source != null, "source", "source is required: JsonArchiveSource or ClickHouseArchiveSource");
      require(topic != null && topic.length() <= 255 && TOPIC.matcher(topic).matches(), "topic",
          "topic must be letters, digits, '_' and '-' in dot-separated parts (no wildcards), e.g."
              + " order.created, was " + (topic == null ? "missing" : "'" + topic + "'"));
      require(from != null, "from", "from is required: the first instant to replay, inclusive");
      require(to != null, "to", "to is required: the last instant to replay, inclusive");
      require(!from.isAfter(to), "to", "to (" + to + ") is before from (" + from + "): the range is inclusive,"
          + " from <= to");
      require(sink != null, "sink", "sink is required: PublisherSink.of(publisher), or DryRunSink for a dry run");
      require(batchId == null || BATCH_ID.matcher(batchId).matches(), "batchId", "batchId must be 1 to 64"
          + " letters, digits, '_', '.' or '-', was '" + batchId + "'");
      require(progress != null, "progress", "progress must not be null: leave it unset for none");
      return new EventReplay(this);
    }

    private static void require(boolean condition, String option, String message) {
      if (!condition) {
        throw new ReplayConfigurationException(option, message);
      }
    }
  }
}
