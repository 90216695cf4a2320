package io.mic.outbox.micrometer;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.OutboxStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Publishes what the outbox does to a Micrometer {@link MeterRegistry}.
 *
 * <ul>
 *   <li>From the dispatchers, through {@link #listener()}: counters {@code mic.outbox.events.dispatched},
 *       {@code .events.retried}, {@code .events.dead.lettered}, {@code .events.lease.lost},
 *       {@code .events.released}, {@code .publish.stalled} (tag {@code topic}; releases also tag
 *       {@code reason}: {@code broker_unavailable}, {@code stopping}, {@code paused}, {@code order_blocked}),
 *       {@code .poll.failed}; timers {@code mic.outbox.publish} (per event, tag {@code topic}) and {@code mic.outbox.batch}.</li>
 *   <li>From the store, when a {@link Builder#store(OutboxStore) store} is given: gauges
 *       {@code mic.outbox.events} (tag {@code status}, one per {@link io.mic.outbox.OutboxStatus}),
 *       {@code mic.outbox.oldest.pending.age} (seconds, 0 when nothing waits: the lag),
 *       {@code mic.outbox.oldest.transaction.age} (seconds: how long the database's oldest open
 *       transaction has been holding back the cleanup of dead rows, see
 *       {@link OutboxStore#oldestTransactionAge()}; 0 when none is open or the store cannot tell) and
 *       {@code mic.outbox.dead.tuples} ({@link OutboxStore#deadTuples()}; {@code NaN} when the store cannot
 *       tell) and {@code mic.outbox.aggregates.held} (aggregates waiting behind a dead event,
 *       {@link OutboxStore#heldAggregates()}).</li>
 * </ul>
 *
 * <p>No meter carries an aggregate type or id, nor anything from a payload or header. The gauges read
 * the store lazily: the first gauge read after {@link Builder#gaugeRefresh(Duration) gaugeRefresh} has
 * passed runs {@code countByStatus()} (resp. {@code oldestPendingAge()}, {@code oldestTransactionAge()})
 * once on the scraping thread, and every other read until then, from any gauge or scrape, gets the
 * remembered value. A store that cannot be read makes the gauges report {@code NaN} until a later read
 * works.
 *
 * <pre>{@code
 * MicrometerOutboxMetrics metrics = MicrometerOutboxMetrics.builder()
 *     .registry(meterRegistry)
 *     .store(store)                         // omit to publish counters and timers only
 *     .build();
 * AsyncOutboxDispatcher dispatcher = AsyncOutboxDispatcher.builder()
 *     .store(store).dispatchFn(publish)
 *     .listener(metrics.listener())         // or OutboxListeners.of(metrics.listener(), health)
 *     .build();
 * ...
 * dispatcher.close();
 * metrics.close();                          // removes the gauges before the DataSource goes away
 * }</pre>
 *
 * <p>One listener may serve several dispatchers. Use one binding per store: a second store in the same
 * registry needs its own {@link Builder#prefix(String) prefix} or {@link Builder#tag(String, String) tag}.
 */
public final class MicrometerOutboxMetrics implements AutoCloseable {
  public static final String DEFAULT_PREFIX = "mic.outbox";
  public static final Duration DEFAULT_GAUGE_REFRESH = Duration.ofSeconds(10);

  private final OutboxListener listener;
  private final StoreGauges gauges;

  private MicrometerOutboxMetrics(Builder b, Tags tags) {
    // gauges first: they refuse a registry that already has them, before anything else is registered
    this.gauges = b.store == null ? null : new StoreGauges(b.registry, b.store, b.prefix, tags, b.gaugeRefresh);
    this.listener = new MeterListener(b.registry, b.prefix, tags);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The listener to register with the dispatchers (thread-safe, never throws). */
  public OutboxListener listener() {
    return listener;
  }

  /**
   * Removes the store gauges from the registry, so a scrape after shutdown no longer reads the store.
   * Counters and timers stay registered, like the meters of any stopped component. Idempotent.
   */
  @Override
  public void close() {
    if (gauges != null) {
      gauges.remove();
    }
  }

  /** Builds a {@link MicrometerOutboxMetrics}: {@code registry} is required, everything else optional. */
  public static final class Builder {
    private static final Pattern PREFIX = Pattern.compile("[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*");
    private static final Set<String> OWN_TAGS = Set.of("topic", "status");

    private MeterRegistry registry;
    private OutboxStore store;
    private String prefix = DEFAULT_PREFIX;
    private Duration gaugeRefresh = DEFAULT_GAUGE_REFRESH;
    private final List<String[]> tagPairs = new ArrayList<>();

    private Builder() {}

    /** Required: where the meters are registered. */
    public Builder registry(MeterRegistry registry) {
      this.registry = registry;
      return this;
    }

    /** The store the gauges read (default none: counters and timers only). */
    public Builder store(OutboxStore store) {
      this.store = store;
      return this;
    }

    /** First part of every meter name (default {@value #DEFAULT_PREFIX}): dot-separated lowercase words. */
    public Builder prefix(String prefix) {
      this.prefix = prefix;
      return this;
    }

    /**
     * The longest a gauge value may be remembered (default 10 s): the store is read at most once per
     * interval for the status gauges and once for the age gauge, however often they are scraped.
     */
    public Builder gaugeRefresh(Duration gaugeRefresh) {
      this.gaugeRefresh = gaugeRefresh;
      return this;
    }

    /**
     * A tag added to every meter of this binding, e.g. {@code tag("outbox", "orders")} to tell two stores
     * apart. Keep the value fixed: never an id, a payload field or anything else unbounded.
     */
    public Builder tag(String key, String value) {
      this.tagPairs.add(new String[] {key, value});
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public MicrometerOutboxMetrics build() {
      require(registry != null, "registry is required: .registry(meterRegistry)");
      require(prefix != null && PREFIX.matcher(prefix).matches(),
          "prefix must be dot-separated lowercase words such as " + DEFAULT_PREFIX + ", was " + prefix);
      require(gaugeRefresh != null && !gaugeRefresh.isNegative() && !gaugeRefresh.isZero(),
          "gaugeRefresh must be > 0, was " + gaugeRefresh);
      Tags tags = Tags.empty();
      for (String[] pair : tagPairs) {
        require(pair[0] != null && !pair[0].isBlank() && pair[1] != null,
            "tag needs a non-blank key and a value, was " + pair[0] + "=" + pair[1]);
        require(!OWN_TAGS.contains(pair[0]), "tag key " + pair[0] + " is set by the binding itself; choose"
            + " another key");
        tags = tags.and(pair[0], pair[1]);
      }
      return new MicrometerOutboxMetrics(this, tags);
    }

    private static void require(boolean condition, String message) {
      if (!condition) {
        throw new InvalidConfigurationException(message);
      }
    }
  }
}
