package io.mic.outbox;

import java.util.Collection;

/**
 * What producer code needs from the outbox: append events to the transaction in progress. Depend on this
 * interface rather than on a store, so that tests can hand in an {@link InMemoryOutboxStore} and
 * production the JDBC store bound to the current transaction ({@code JdbcOutboxAppender}).
 *
 * <pre>{@code
 * final class OrderService {
 *   private final OutboxAppender outbox;
 *   OrderService(OutboxAppender outbox) { this.outbox = outbox; }
 *
 *   void place(Order order) {            // called inside the caller's transaction
 *     orders.insert(order);
 *     outbox.append(OutboxEvent.builder().aggregate("order", order.id())
 *         .topic("order.created").payload(order.json()).build());
 *   }
 * }
 * new OrderService(new InMemoryOutboxStore());                         // in a unit test
 * new OrderService(JdbcOutboxAppender.of(store, transactions::current)); // in production
 * }</pre>
 *
 * <p>Implementations never commit: the event becomes visible to the dispatcher when the surrounding
 * transaction commits (at once for the in-memory store, which has no transactions).
 */
public interface OutboxAppender {
  /**
   * Appends one event to the current transaction.
   *
   * @throws DuplicateEventException if an event with this id exists
   */
  void append(OutboxEvent event);

  /** Appends events to the current transaction, in the order given, all or none. */
  void append(Collection<OutboxEvent> events);
}
