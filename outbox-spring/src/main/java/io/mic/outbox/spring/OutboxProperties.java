package io.mic.outbox.spring;

import io.mic.outbox.AsyncOutboxDispatcher;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;

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
 * mic.outbox.batch-size=500
 * mic.outbox.max-attempts=5
 * mic.outbox.retry.initial-delay=2s
 * mic.outbox.retry.max-delay=10m
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
  /**
   * Hold each claim as the row locks of a transaction kept open until its batch is settled, instead of a
   * lease written into the rows: about half the database work per event, PostgreSQL only, and each batch in
   * flight holds a pooled connection (docs/configuration.md, "Claims held by transactions").
   */
  private boolean transactionalClaims;
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
  /** Events read or claimed per round trip to the database (at most 10,000). */
  private int batchSize = OutboxDispatcher.DEFAULT_BATCH_SIZE;
  /** Attempts before an event moves to the dead-letter queue. */
  private int maxAttempts = OutboxDispatcher.DEFAULT_MAX_ATTEMPTS;
  /**
   * With preserve-aggregate-order: a dead-lettered event keeps its aggregate's later events waiting until it
   * is redriven (it goes first) or purged, so ordered consumers never see a gap (docs/ordering.md).
   */
  private boolean holdAggregateOnDeadLetter;
  /** How long stopping the dispatcher waits for the publications in flight before it releases the rest. */
  private Duration shutdownTimeout = AsyncOutboxDispatcher.DEFAULT_SHUTDOWN_TIMEOUT;
  /** Delete an event once it is published instead of marking it dispatched (no archive, no redrive after). */
  private boolean deleteOnDispatch;
  /**
   * Wake the dispatchers of every instance at each commit that appended (PostgreSQL LISTEN/NOTIFY),
   * so events go out within milliseconds instead of at the next poll.
   */
  private boolean notifyOnAppend;
  /**
   * Check at start that the broker of a publisher built from properties is reachable and its destination
   * exists (RabbitMQ: the exchange; NATS: a stream captures each of mic.outbox.nats.topics; Kafka: each
   * of mic.outbox.kafka.topics), and fail the start naming the property. Off lets the application
   * start while the broker is down; the events then wait.
   */
  private boolean startupCheck = true;
  private final Retry retry = new Retry();
  private final Health health = new Health();
  private final Tracing tracing = new Tracing();
  @NestedConfigurationProperty
  private final PublisherProperties.Nats nats = new PublisherProperties.Nats();
  @NestedConfigurationProperty
  private final PublisherProperties.RabbitMq rabbitmq = new PublisherProperties.RabbitMq();
  @NestedConfigurationProperty
  private final PublisherProperties.Kafka kafka = new PublisherProperties.Kafka();

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

  public boolean isTransactionalClaims() {
    return transactionalClaims;
  }

  public void setTransactionalClaims(boolean transactionalClaims) {
    this.transactionalClaims = transactionalClaims;
  }

  public boolean isCreateSchema() {
    return createSchema;
  }

  public void setCreateSchema(boolean createSchema) {
    this.createSchema = createSchema;
  }

  public int getBatchSize() {
    return batchSize;
  }

  public void setBatchSize(int batchSize) {
    this.batchSize = batchSize;
  }

  public int getMaxAttempts() {
    return maxAttempts;
  }

  public void setMaxAttempts(int maxAttempts) {
    this.maxAttempts = maxAttempts;
  }

  public boolean isHoldAggregateOnDeadLetter() {
    return holdAggregateOnDeadLetter;
  }

  public void setHoldAggregateOnDeadLetter(boolean holdAggregateOnDeadLetter) {
    this.holdAggregateOnDeadLetter = holdAggregateOnDeadLetter;
  }

  public Duration getShutdownTimeout() {
    return shutdownTimeout;
  }

  public void setShutdownTimeout(Duration shutdownTimeout) {
    this.shutdownTimeout = shutdownTimeout;
  }

  public boolean isDeleteOnDispatch() {
    return deleteOnDispatch;
  }

  public void setDeleteOnDispatch(boolean deleteOnDispatch) {
    this.deleteOnDispatch = deleteOnDispatch;
  }

  public boolean isNotifyOnAppend() {
    return notifyOnAppend;
  }

  public void setNotifyOnAppend(boolean notifyOnAppend) {
    this.notifyOnAppend = notifyOnAppend;
  }

  public boolean isStartupCheck() {
    return startupCheck;
  }

  public void setStartupCheck(boolean startupCheck) {
    this.startupCheck = startupCheck;
  }

  public Tracing getTracing() {
    return tracing;
  }

  public PublisherProperties.Nats getNats() {
    return nats;
  }

  public PublisherProperties.RabbitMq getRabbitmq() {
    return rabbitmq;
  }

  public PublisherProperties.Kafka getKafka() {
    return kafka;
  }

  public Retry getRetry() {
    return retry;
  }

  public Health getHealth() {
    return health;
  }

  /** {@code mic.outbox.retry.*}: the wait before an event whose publication failed is tried again. */
  public static class Retry {
    /** The wait after the first failure (with 20 % jitter); it doubles with each further one. */
    private Duration initialDelay = OutboxDispatcher.DEFAULT_RETRY_INITIAL;
    /** The longest wait between two attempts. */
    private Duration maxDelay = OutboxDispatcher.DEFAULT_RETRY_MAX;

    public Duration getInitialDelay() {
      return initialDelay;
    }

    public void setInitialDelay(Duration initialDelay) {
      this.initialDelay = initialDelay;
    }

    public Duration getMaxDelay() {
      return maxDelay;
    }

    public void setMaxDelay(Duration maxDelay) {
      this.maxDelay = maxDelay;
    }
  }

  /** {@code mic.outbox.tracing.*}: OpenTelemetry, when the application has an {@code OpenTelemetry} bean. */
  public static class Tracing {
    /**
     * Give each appended event the current trace context and publish in a PRODUCER span. Turn it off
     * when the application wraps its publisher itself.
     */
    private boolean enabled = true;
    /**
     * The spans' messaging.system: nats, rabbitmq or kafka. Needed only when the publisher is a bean of another
     * type than the three publishers, whose broker it is read from.
     */
    private String messagingSystem;

    public boolean isEnabled() {
      return enabled;
    }

    public void setEnabled(boolean enabled) {
      this.enabled = enabled;
    }

    public String getMessagingSystem() {
      return messagingSystem;
    }

    public void setMessagingSystem(String messagingSystem) {
      this.messagingSystem = messagingSystem;
    }
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
