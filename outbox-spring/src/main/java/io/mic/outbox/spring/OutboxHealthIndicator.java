package io.mic.outbox.spring;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxHealth;
import java.time.Duration;
import java.util.Objects;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * The outbox in Spring Boot's health endpoint (as {@code outbox}): down when the oldest waiting event is
 * older than {@code mic.outbox.health.max-lag} or the store cannot be read. Dead letters do not make it
 * down (dispatch goes on around them): they are reported as the {@code dlq} detail to alert on. Neither
 * does an old transaction: {@code oldestTransactionAge} (a duration, or {@code none}) shows how long the
 * database's oldest open transaction has been holding back the cleanup of the outbox's dead rows.
 */
public final class OutboxHealthIndicator extends AbstractHealthIndicator {
  private final OutboxHealth health;
  private final Duration maxLag;

  /** @throws InvalidConfigurationException when {@code maxLag} is null or negative */
  public OutboxHealthIndicator(OutboxHealth health, Duration maxLag) {
    super("outbox health check failed");
    this.health = Objects.requireNonNull(health, "health");
    if (maxLag == null || maxLag.isNegative()) {
      throw new InvalidConfigurationException("maxLag must be >= 0, was " + maxLag);
    }
    this.maxLag = maxLag;
  }

  @Override
  protected void doHealthCheck(Health.Builder builder) {
    OutboxHealth.Snapshot s = health.snapshot();
    (s.isHealthy(maxLag) ? builder.up() : builder.down())
        .withDetail("lag", s.lag().map(Duration::toString).orElse("none"))
        .withDetail("oldestTransactionAge", s.oldestTransactionAge().map(Duration::toString).orElse("none"))
        .withDetail("maxLag", maxLag.toString())
        .withDetail("pending", s.pending())
        .withDetail("dlq", s.dlq())
        .withDetail("lastSuccessfulDispatch", s.lastSuccessfulDispatch().map(Object::toString).orElse("none"))
        .withDetail("dispatched", s.dispatched())
        .withDetail("pollFailures", s.pollFailures());
  }
}
