package io.mic.outbox.spring;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.sql.Connection;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
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
      + " method or inside TransactionTemplate.execute(...)";
  static final String OTHER_RESOURCE = "the active transaction does not hold a connection of the outbox's"
      + " DataSource, so the event would not commit with it: manage that DataSource with the transaction"
      + " manager (DataSourceTransactionManager, JdbcTransactionManager or JpaTransactionManager on the same"
      + " DataSource)";

  private static final Logger LOG = LoggerFactory.getLogger(TransactionalOutbox.class);

  private final JdbcOutboxStore store;
  private final DataSource dataSource;
  private final Runnable afterCommit;

  /** Appends through {@code store} on the transaction's connection of {@code dataSource}. */
  public TransactionalOutbox(JdbcOutboxStore store, DataSource dataSource) {
    this(store, dataSource, () -> {});
  }

  /**
   * As above; {@code afterCommit} runs once after each transaction that appended commits. Its failure is
   * logged, never thrown: the transaction has committed by then.
   */
  public TransactionalOutbox(JdbcOutboxStore store, DataSource dataSource, Runnable afterCommit) {
    this.store = Objects.requireNonNull(store, "store");
    this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    this.afterCommit = Objects.requireNonNull(afterCommit, "afterCommit");
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
    Connection connection = DataSourceUtils.getConnection(dataSource);
    try {
      store.append(connection, events);
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
