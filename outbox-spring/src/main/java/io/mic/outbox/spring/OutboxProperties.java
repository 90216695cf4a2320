package io.mic.outbox.spring;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code mic.outbox.*} properties. Durations take Spring's forms ({@code 500ms}, {@code 30s},
 * {@code PT1M}); invalid values fail the application's start with a message naming the property.
 *
 * <pre>
 * mic.outbox.table=app.outbox
 * mic.outbox.create-schema=true
 * mic.outbox.preserve-aggregate-order=true
 * mic.outbox.workers=2
 * mic.outbox.lease-ttl=30s
 * mic.outbox.poll-interval=100ms
 * </pre>
 *
 * <p>The build writes {@code META-INF/spring-configuration-metadata.json} (the configuration processor), so
 * IDEs complete these names with their descriptions and defaults. Defaults the processor cannot read from
 * a field (a constant of another class) are given in {@code additional-spring-configuration-metadata.json};
 * {@code ConfigurationMetadataTest} keeps both equal to the fields.
 */
@ConfigurationProperties(prefix = "mic.outbox")
public class OutboxProperties {
  /** Whether the outbox beans are created at all. */
  private boolean enabled = true;
  /** The outbox table, optionally schema-qualified (schema.table). */
  private String table = JdbcOutboxStore.DEFAULT_TABLE;
  /**
   * Claim events under a lease before publishing them. On by default, unlike the plain builder, because an
   * application usually runs as several instances on one database, and only claims keep them from
   * publishing the same events.
   */
  private boolean useClaim = true;
  /** Publish each aggregate's events one at a time, in order. */
  private boolean preserveAggregateOrder;
  /** Dispatcher worker threads. */
  private int workers = AsyncOutboxDispatcher.DEFAULT_WORKERS;
  /** How long a claim holds its events before another instance may take them over. */
  private Duration leaseTtl = OutboxDispatcher.DEFAULT_LEASE_TTL;
  /** How long an idle worker waits before polling again. */
  private Duration pollInterval = AsyncOutboxDispatcher.DEFAULT_POLL_INTERVAL;
  /**
   * Create the table and its indexes at start when they are missing. Off by default: most applications
   * ship the DDL with their own migrations (Flyway, Liquibase).
   */
  private boolean createSchema;
  private final Health health = new Health();

  public boolean isEnabled() {
    return enabled;
  }

  public void setEnabled(boolean enabled) {
    this.enabled = enabled;
  }

  public String getTable() {
    return table;
  }

  public void setTable(String table) {
    this.table = table;
  }

  public boolean isUseClaim() {
    return useClaim;
  }

  public void setUseClaim(boolean useClaim) {
    this.useClaim = useClaim;
  }

  public boolean isPreserveAggregateOrder() {
    return preserveAggregateOrder;
  }

  public void setPreserveAggregateOrder(boolean preserveAggregateOrder) {
    this.preserveAggregateOrder = preserveAggregateOrder;
  }

  public int getWorkers() {
    return workers;
  }

  public void setWorkers(int workers) {
    this.workers = workers;
  }

  public Duration getLeaseTtl() {
    return leaseTtl;
  }

  public void setLeaseTtl(Duration leaseTtl) {
    this.leaseTtl = leaseTtl;
  }

  public Duration getPollInterval() {
    return pollInterval;
  }

  public void setPollInterval(Duration pollInterval) {
    this.pollInterval = pollInterval;
  }

  public boolean isCreateSchema() {
    return createSchema;
  }

  public void setCreateSchema(boolean createSchema) {
    this.createSchema = createSchema;
  }

  public Health getHealth() {
    return health;
  }

  /** {@code mic.outbox.health.*}: when the health indicator reports the outbox down. */
  public static class Health {
    /** The age of the oldest waiting event above which the outbox is reported down. */
    private Duration maxLag = Duration.ofMinutes(5);

    public Duration getMaxLag() {
      return maxLag;
    }

    public void setMaxLag(Duration maxLag) {
      this.maxLag = maxLag;
    }
  }
}
