package io.mic.outbox.spring;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxHealth;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.PauseState;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The outbox in Spring Boot's health endpoint (as {@code outbox}): down when the oldest waiting event of a
 * topic that is not paused is older than {@code mic.outbox.health.max-lag}, or the store cannot be read. A
 * pause ({@code mic-outbox pause}) is not a failure: its events wait on purpose, so they do not count, and
 * under a pause of every topic the outbox is up. Dead letters do not make it down (dispatch goes on around
 * them): they are reported as the {@code dlq} detail to alert on. Neither does an old transaction:
 * {@code oldestTransactionAge} (a duration, or {@code none}) shows how long the database's oldest open
 * transaction has been holding back the cleanup of the outbox's dead rows. docs/integrations.md lists every
 * detail.
 */
public final class OutboxHealthIndicator extends AbstractHealthIndicator {
  private final OutboxHealth health;
  private final OutboxStore store;
  private final Duration maxLag;

  /** @throws InvalidConfigurationException when {@code maxLag} is null or negative */
  public OutboxHealthIndicator(OutboxHealth health, OutboxStore store, Duration maxLag) {
    super("outbox health check failed");
    this.health = Objects.requireNonNull(health, "health");
    this.store = Objects.requireNonNull(store, "store");
    if (maxLag == null || maxLag.isNegative()) {
      throw new InvalidConfigurationException("maxLag must be >= 0, was " + maxLag);
    }
    this.maxLag = maxLag;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    OutboxHealth.Snapshot s = health.snapshot();
    PauseState pauses = store.pauseState();
    Optional<Duration> unpausedLag = unpausedLag(s, pauses);
    boolean up = unpausedLag.map(lag -> lag.compareTo(maxLag) <= 0).orElse(true);
    (up ? builder.up() : builder.down())
        .withDetail("lag", s.lag().map(Duration::toString).orElse("none"))
        .withDetail("unpausedLag", unpausedLag.map(Duration::toString).orElse("none"))
        .withDetail("maxLag", maxLag.toString())
        .withDetail("paused", pauses.all() ? "all" : pauses.topics().isEmpty() ? "none"
            : String.join(",", new TreeSet<>(pauses.topics())))
        .withDetail("oldestTransactionAge", s.oldestTransactionAge().map(Duration::toString).orElse("none"))
        .withDetail("pending", s.pending())
        .withDetail("dlq", s.dlq())
        .withDetail("heldAggregates", s.heldAggregates())
        .withDetail("lastSuccessfulDispatch", s.lastSuccessfulDispatch().map(Object::toString).orElse("none"))
        .withDetail("dispatched", s.dispatched())
        .withDetail("pollFailures", s.pollFailures());
  }

  /** The lag that judges health: none under a pause of everything; without the paused topics' events. */
  private Optional<Duration> unpausedLag(OutboxHealth.Snapshot s, PauseState pauses) {
    if (pauses.all()) {
      return Optional.empty();
    }
    if (pauses.topics().isEmpty()) {
      return s.lag();
    }
    return store.oldestPendingAge(pauses.topics());
  }
}
