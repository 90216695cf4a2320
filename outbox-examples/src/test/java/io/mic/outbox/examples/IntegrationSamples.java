package io.mic.outbox.examples;

import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import jakarta.persistence.EntityManagerFactory;
import javax.sql.DataSource;
import org.hibernate.Session;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;

/**
 * The jOOQ and JPA/Hibernate recipes of docs/integrations.md, between the markers that {@code DocSamplesTest}
 * compares with the documentation; {@code IntegrationRecipesTest} runs them on PostgreSQL.
 */
final class IntegrationSamples {
  /** The orders table of every recipe. Its key is checked at commit, after the event was appended. */
  static final String ORDERS_DDL = "CREATE TABLE shop_order (id varchar(64),"
      + " total bigint NOT NULL, CONSTRAINT shop_order_pk PRIMARY KEY (id) DEFERRABLE INITIALLY DEFERRED)";

  private IntegrationSamples() {}

  static void placeOrderWithJooq(DataSource dataSource, JdbcOutboxStore store, String orderId, long total) {
    // docs/integrations.md 4 begin
    DSLContext db = DSL.using(dataSource, SQLDialect.POSTGRES);
    db.transaction(trx -> {
      trx.dsl().insertInto(table("shop_order"), field("id"), field("total"))
          .values(orderId, total).execute();
      trx.dsl().connection(connection -> store.append(connection, OutboxEvent.builder()
          .aggregate("order", orderId).topic("order.placed")
          .payload("{\"total\":" + total + "}").build()));
    });                                            // commits both, or rolls both back
    // docs/integrations.md 4 end
  }

  static void placeOrderWithJpa(EntityManagerFactory emf, JdbcOutboxStore store, String orderId, long total) {
    // docs/integrations.md 5 begin
    emf.runInTransaction(em -> {
      em.persist(new ShopOrder(orderId, total));
      em.unwrap(Session.class).doWork(connection -> store.append(connection, OutboxEvent.builder()
          .aggregate("order", orderId).topic("order.placed")
          .payload("{\"total\":" + total + "}").build()));
    });                                            // commits both, or rolls both back
    // docs/integrations.md 5 end
  }
}
