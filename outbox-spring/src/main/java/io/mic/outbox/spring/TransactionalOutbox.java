package io.mic.outbox.spring;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.sql.Connection;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Appends events in the current Spring-managed transaction ({@code @Transactional},
 * {@code TransactionTemplate}), on the connection that transaction holds, so the events commit or roll
 * back with the business change. Appending outside a transaction is refused: the event would be committed
 * apart from the change it announces.
 *
 * <pre>{@code
 * @Transactional
 * public void placeOrder(Order order) {
 *   orders.save(order);
 *   outbox.append(OutboxEvent.builder()
 *       .aggregate("order", order.id()).topic("order.placed").payload(order.json()).build());
 * }
 * }</pre>
 *
 * <p>The transaction manager must manage the outbox's {@link DataSource}: a {@code DataSourceTransactionManager},
 * {@code JdbcTransactionManager} or a {@code JpaTransactionManager} on the same DataSource. After the commit
 * the dispatcher is woken, so the events go out without waiting for the next poll.
 */
public final class TransactionalOutbox {
  static final String NO_TRANSACTION = "no Spring-managed transaction is active: an outbox event must be"
      + " written in the transaction of the change it announces. Call append(...) from a @Transactional"
      + " method or inside TransactionTemplate.execute(...); a @Transactional method called through 'this' runs"
      + " without its transaction, so call it through the bean";
  static final String OTHER_RESOURCE = "the active transaction does not hold a connection of the outbox's"
      + " DataSource, so the event would not commit with it: manage that DataSource with the transaction"
      + " manager (DataSourceTransactionManager, JdbcTransactionManager or JpaTransactionManager on the same"
      + " DataSource)";

  static final String NO_SERIALIZER = "no payload serializer: add tools.jackson.core:jackson-databind (Spring"
      + " Boot's spring-boot-starter-json), declare an OutboxPayloadSerializer bean, or pass JSON text to"
      + " OutboxEvent.builder().payload(text)";

  private static final Logger LOG = LoggerFactory.getLogger(TransactionalOutbox.class);

  private final JdbcOutboxStore store;
  private final DataSource dataSource;
  private final Runnable afterCommit;
  private final UnaryOperator<OutboxEvent> beforeAppend;
  private final Function<Object, String> payloadSerializer;

  /** Appends through {@code store} on the transaction's connection of {@code dataSource}. */
  public TransactionalOutbox(JdbcOutboxStore store, DataSource dataSource) {
    this(store, dataSource, () -> {});
  }

  /**
   * As above; {@code afterCommit} runs once after each transaction that appended commits. Its failure is
   * logged, never thrown: the transaction has committed by then.
   */
  public TransactionalOutbox(JdbcOutboxStore store, DataSource dataSource, Runnable afterCommit) {
    this(store, dataSource, afterCommit, UnaryOperator.identity(), null);
  }

  /**
   * As above; {@code beforeAppend} replaces each event before it is written, in the caller's thread (the
   * auto-configuration gives it the current trace context this way), and {@code payloadSerializer} turns the
   * objects given to {@link #append(String, String, String, Object)} into JSON text ({@code null}: none, and
   * appending an object is refused).
   */
  public TransactionalOutbox(JdbcOutboxStore store, DataSource dataSource, Runnable afterCommit,
      UnaryOperator<OutboxEvent> beforeAppend, Function<Object, String> payloadSerializer) {
    this.store = Objects.requireNonNull(store, "store");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.afterCommit = Objects.requireNonNull(afterCommit, "afterCommit");
    this.beforeAppend = Objects.requireNonNull(beforeAppend, "beforeAppend");
    this.payloadSerializer = payloadSerializer;
  }

  /**
   * Appends, in the current transaction, an event whose payload is {@code payload} serialized to JSON (by
   * default with the application's Jackson {@code ObjectMapper}).
   *
   * <pre>{@code
   * outbox.append("order", order.id(), "order.created", new OrderCreated(order.id(), order.total()));
   * }</pre>
   *
   * @return the event appended (its {@code id()} is the consumers' idempotency key)
   * @throws OutboxException as {@link #append(OutboxEvent)}; also when the payload cannot be serialized
   */
  public OutboxEvent append(String aggregateType, String aggregateId, String topic, Object payload) {
    OutboxEvent event = event(aggregateType, aggregateId, topic, payload).build();
    append(event);
    return event;
  }

  /**
   * A builder holding the aggregate, the topic and {@code payload} serialized to JSON, for an event that needs
   * more (a header, a priority): {@code outbox.append(outbox.event(…).header("tenant", "acme").build())}.
   *
   * @throws OutboxException when the payload is a {@code String} (JSON text goes to
   *     {@code OutboxEvent.builder().payload(text)}), when there is no serializer, or it fails
   */
  public OutboxEvent.Builder event(String aggregateType, String aggregateId, String topic, Object payload) {
    Objects.requireNonNull(payload, "payload");
    if (payload instanceof CharSequence) {
      throw new OutboxException("the payload of topic " + topic + " is a String, which would be serialized as one"
          + " JSON string: pass JSON text to OutboxEvent.builder().payload(text), and objects here");
    }
    if (payloadSerializer == null) {
      throw new OutboxException(NO_SERIALIZER);
    }
    String json;
    try {
      json = payloadSerializer.apply(payload);
    } catch (RuntimeException e) {
      // the serializer's message names types and properties; the payload's values stay out of it
      throw new OutboxException("cannot serialize the payload of topic " + topic + " (a "
          + payload.getClass().getName() + ") to JSON: " + e.getMessage(), e);
    }
    return OutboxEvent.builder().aggregate(aggregateType, aggregateId).topic(topic).payload(json);
  }

  /**
   * Appends one event in the current transaction.
   *
   * @throws OutboxException when no transaction is active, or the active one does not hold a connection of
   *     the outbox's DataSource
   */
  public void append(OutboxEvent event) {
    Objects.requireNonNull(event, "event");
    append(List.of(event));
  }

  /** Appends events in the current transaction, in the order given; see {@link JdbcOutboxStore#append(Connection, Collection)}. */
  public void append(Collection<OutboxEvent> events) {
    Objects.requireNonNull(events, "events");
    if (!TransactionSynchronizationManager.isActualTransactionActive()) {
      throw new OutboxException(NO_TRANSACTION);
    }
    // asked before getConnection, which would bind a connection of its own to a transaction of another
    // resource: one that commits each statement (auto-commit) or rolls back when released, apart from it
    if (TransactionSynchronizationManager.getResource(dataSource) == null) {
      throw new OutboxException(OTHER_RESOURCE);
    }
    List<OutboxEvent> appended = events.stream().map(beforeAppend).toList();
    Connection connection = DataSourceUtils.getConnection(dataSource);
    try {
      store.append(connection, appended);
    } finally {
      DataSourceUtils.releaseConnection(connection, dataSource);
    }
    if (!events.isEmpty() && TransactionSynchronizationManager.isSynchronizationActive()) {
      TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
        @Override
        public void afterCommit() {
          try {
            afterCommit.run();
          } catch (RuntimeException e) {
            // the transaction has committed: an exception here would tell the caller it failed, and a retry
            // would repeat a business change that is done; the dispatcher's next poll finds the events
            LOG.warn("the outbox's wake-up after a commit failed ({}); the committed events go out at the"
                + " dispatcher's next poll", e.toString());
          }
        }
      });
    }
  }
}
