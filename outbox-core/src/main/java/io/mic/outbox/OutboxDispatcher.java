package io.mic.outbox;

import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * Publishes outbox events one batch at a time, on the calling thread.
 *
 * <pre>{@code
 * OutboxDispatcher dispatcher = OutboxDispatcher.builder()
 *     .store(store)
 *     .dispatchFn(event -> broker.publish(event.topic(), event.payload()))
 *     .build();
 * DispatchResult result = dispatcher.dispatchOnce();
 * }</pre>
 *
 * <p>A batch is published in the store's order: event by event through a {@link DispatchFn}, wave by wave
 * through a {@link BatchDispatchFn}. Without claims each event (each wave) is marked right after its
 * publication. With claims ({@code useClaim(true)}), and in a pipelined {@link AsyncOutboxDispatcher} in
 * either mode, the successful events of a batch are marked together in one store call at the end of the
 * batch, which is what makes a SQL store fast; a crash before that mark republishes at most that batch.
 * Delivery is at-least-once in every mode.
 *
 * <p><b>Leases.</b> While a claimed batch is being published, a background timer renews the leases of
 * its unsettled events every third of {@code leaseTtl}, however long one publication takes, so no other
 * worker takes them over while this one is alive. When a renewal happened during the batch, the
 * successes so far are marked before the next publication. When the leases were last confirmed longer
 * ago than two renewal periods (the process was frozen), they are renewed before the next publication,
 * so a worker that wakes up after losing its batch does not publish it again.
 *
 * <p><b>Broker outages.</b> A publication that fails with {@link PublishUnavailableException} puts its
 * events back untried, without counting an attempt. A batch that published nothing for that reason makes
 * {@link AsyncOutboxDispatcher} wait before the next one, doubling the wait up to 30 s (with jitter);
 * the outage is logged once with its cause, then summarised at most every 30 s, and its end is logged. A
 * publisher that offers a {@link io.mic.outbox.spi.BrokerProbe} (the NATS, RabbitMQ and Kafka ones do) is asked
 * every 250 ms during that wait, which ends as soon as the probe sees the broker come back.
 *
 * <p><b>Marks that fail.</b> A mark that throws (a connection reset, the first moments of a failover) is
 * tried again after 100 ms, 500 ms and 2 s ({@link #MARK_RETRY_PAUSES}), within 5 s of its first try
 * ({@link #MARK_RETRY_WINDOW}); only then does the batch give up, and its published events go out again
 * (at-least-once). A mark whose commit went through although its answer was lost finds its rows already
 * marked when tried again, and nothing goes out twice. They count as dispatched when the store holds them
 * {@code DISPATCHED} under the batch's claim (or without one); a deleting mark leaves no row, and a row gone
 * counts as dispatched without claims and as lease lost with them (see {@code MarkRetry}).
 *
 * <p>Not thread-safe: one thread per instance. Use {@link AsyncOutboxDispatcher} for background workers.
 */
public final class OutboxDispatcher {
  public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(3);
  public static final int DEFAULT_BATCH_SIZE = 100;
  public static final int MAX_BATCH_SIZE = 10_000;
  public static final int DEFAULT_MAX_ATTEMPTS = 10;
  public static final int DEFAULT_AGGREGATE_RUN = 100;
  public static final Duration DEFAULT_RETRY_INITIAL = Duration.ofSeconds(1);
  public static final Duration DEFAULT_RETRY_MAX = Duration.ofMinutes(5);
  public static final String DEFAULT_NAME = "mic-outbox";
  /** The pauses before a failed mark is tried again; after the last one the batch gives up. */
  public static final List<Duration> MARK_RETRY_PAUSES =
      List.of(Duration.ofMillis(100), Duration.ofMillis(500), Duration.ofSeconds(2));
  /** No mark is tried again later than this after its first try. */
  public static final Duration MARK_RETRY_WINDOW = Duration.ofSeconds(5);

  private final String worker;
  private final BatchReader reader;

  private OutboxDispatcher(DispatcherBuilder<?> b) {
    this.worker = b.name;
    this.reader = new BatchReader(DispatchSettings.of(b, worker, false), new WorkerChannel(b, worker), Set.of());
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Reads (or claims) one batch and publishes it.
   *
   * @return counts of what happened; {@link DispatchResult#isEmpty()} when nothing was due
   */
  public DispatchResult dispatchOnce() {
    Batch batch = reader.next();
    if (batch == null) {
      return DispatchResult.EMPTY;
    }
    batch.send();
    batch.settle();
    return batch.finish();
  }

  /** The name used in lease owners and logs. */
  public String worker() {
    return worker;
  }

  /** Builds an {@link OutboxDispatcher}; see {@link DispatcherBuilder} for the options. */
  public static final class Builder extends DispatcherBuilder<Builder> {
    private Builder() {}

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public OutboxDispatcher build() {
      validate();
      return new OutboxDispatcher(this);
    }
  }
}
