package io.mic.outbox.spring;

import java.time.Duration;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.NestedConfigurationProperty;
import org.springframework.boot.context.properties.bind.DefaultValue;

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
 * IDEs complete these names with their descriptions and defaults, read from the {@code @param} tags and the
 * {@code @DefaultValue}s. An annotation takes no {@code Duration} constant, so each default is the literal of
 * the library's constant ({@code OutboxDispatcher.DEFAULT_LEASE_TTL}, ...); {@code ConfigurationMetadataTest}
 * keeps the literals equal to the constants and the metadata equal to what binding yields.
 *
 * @param enabled Whether the outbox beans are created at all.
 * @param table The outbox table, optionally schema-qualified (schema.table).
 * @param useClaim Claim events under a lease before publishing them. On by default, unlike the plain builder,
 *     because an application usually runs as several instances on one database, and only claims keep them from
 *     publishing the same events.
 * @param transactionalClaims Hold each claim as the row locks of a transaction kept open until its batch is
 *     settled, instead of a lease written into the rows: about half the database work per event, PostgreSQL
 *     only, and each batch in flight holds a pooled connection (docs/configuration.md, "Claims held by
 *     transactions").
 * @param preserveAggregateOrder Publish each aggregate's events one at a time, in order.
 * @param workers Dispatcher worker threads.
 * @param leaseTtl How long a claim holds its events before another instance may take them over.
 * @param pollInterval How long an idle worker waits before polling again.
 * @param createSchema Create the table and its indexes at start when they are missing. Off by default: most
 *     applications ship the DDL with their own migrations (Flyway, Liquibase).
 * @param batchSize Events read or claimed per round trip to the database (at most 10,000).
 * @param maxAttempts Attempts before an event moves to the dead-letter queue.
 * @param holdAggregateOnDeadLetter With preserve-aggregate-order: a dead-lettered event keeps its aggregate's
 *     later events waiting until it is redriven (it goes first) or purged, so ordered consumers never see a gap
 *     (docs/ordering.md).
 * @param shutdownTimeout How long stopping the dispatcher waits for the publications in flight before it
 *     releases the rest.
 * @param deleteOnDispatch Delete an event once it is published instead of marking it dispatched (no archive,
 *     no redrive after).
 * @param notifyOnAppend Wake the dispatchers of every instance at each commit that appended (PostgreSQL
 *     LISTEN/NOTIFY), so events go out within milliseconds instead of at the next poll.
 * @param startupCheck Check at start that the broker of a publisher built from properties is reachable and its
 *     destination exists (RabbitMQ: the exchange; NATS: a stream captures each of mic.outbox.nats.topics; Kafka:
 *     each of mic.outbox.kafka.topics), and fail the start naming the property. Off lets the application start
 *     while the broker is down; the events then wait.
 * @param retry {@code mic.outbox.retry.*}
 * @param health {@code mic.outbox.health.*}
 * @param tracing {@code mic.outbox.tracing.*}
 * @param nats {@code mic.outbox.nats.*}
 * @param rabbitmq {@code mic.outbox.rabbitmq.*}
 * @param kafka {@code mic.outbox.kafka.*}
 */
@ConfigurationProperties(prefix = "mic.outbox")
public record OutboxProperties(
    @DefaultValue("true") boolean enabled,
    @DefaultValue("outbox") String table,
    @DefaultValue("true") boolean useClaim,
    boolean transactionalClaims,
    boolean preserveAggregateOrder,
    @DefaultValue("1") int workers,
    @DefaultValue("3s") Duration leaseTtl,
    @DefaultValue("200ms") Duration pollInterval,
    boolean createSchema,
    @DefaultValue("100") int batchSize,
    @DefaultValue("10") int maxAttempts,
    boolean holdAggregateOnDeadLetter,
    @DefaultValue("30s") Duration shutdownTimeout,
    boolean deleteOnDispatch,
    boolean notifyOnAppend,
    @DefaultValue("true") boolean startupCheck,
    // an empty @DefaultValue binds a group that has no property set to its defaults instead of null
    @DefaultValue Retry retry,
    @DefaultValue Health health,
    @DefaultValue Tracing tracing,
    // declared in another class, so the configuration processor describes them only when told
    @DefaultValue @NestedConfigurationProperty PublisherProperties.Nats nats,
    @DefaultValue @NestedConfigurationProperty PublisherProperties.RabbitMq rabbitmq,
    @DefaultValue @NestedConfigurationProperty PublisherProperties.Kafka kafka) {

  /**
   * {@code mic.outbox.retry.*}: the wait before an event whose publication failed is tried again.
   *
   * @param initialDelay The wait after the first failure (with 20 % jitter); it doubles with each further one.
   * @param maxDelay The longest wait between two attempts.
   */
  public record Retry(@DefaultValue("1s") Duration initialDelay, @DefaultValue("5m") Duration maxDelay) {}

  /**
   * {@code mic.outbox.tracing.*}: OpenTelemetry, when the application has an {@code OpenTelemetry} bean.
   *
   * @param enabled Give each appended event the current trace context and publish in a PRODUCER span. Turn it off
   *     when the application wraps its publisher itself.
   * @param messagingSystem The spans' messaging.system: nats, rabbitmq or kafka. Needed only when the publisher is
   *     a bean of another type than the three publishers, whose broker it is read from.
   */
  public record Tracing(@DefaultValue("true") boolean enabled, String messagingSystem) {}

  /**
   * {@code mic.outbox.health.*}: when the health indicator reports the outbox down.
   *
   * @param maxLag The age of the oldest waiting event above which the outbox is reported down.
   */
  public record Health(@DefaultValue("5m") Duration maxLag) {}
}
