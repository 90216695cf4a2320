package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.jooq.impl.DSL.field;
import static org.jooq.impl.DSL.table;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.spring.TransactionalOutbox;
import io.mic.outbox.test.OutboxTestDatabase;
import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.jooq.DSLContext;
import org.jooq.SQLDialect;
import org.jooq.impl.DSL;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.LocalContainerEntityManagerFactoryBean;
import org.springframework.orm.jpa.SharedEntityManagerCreator;
import org.springframework.orm.jpa.vendor.HibernateJpaVendorAdapter;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

/**
 * The two Spring-managed variants docs/integrations.md names beside its recipes, on PostgreSQL: jOOQ on a
 * {@code TransactionAwareDataSourceProxy} (as Spring Boot's jOOQ support sets it up) and JPA under a
 * {@code JpaTransactionManager} (as Spring Boot sets up Hibernate), each appending through
 * {@link TransactionalOutbox}. The second order with the same id fails at commit, after its event was
 * appended: the event must be rolled back with it.
 */
class SpringManagedRecipesTest {
  private static final OutboxTestDatabase DB = OutboxTestDatabase.postgres();

  private DataSource dataSource;
  private String table;
  private JdbcOutboxStore store;

  @BeforeEach
  void setUp() {
    DB.execute("DROP TABLE IF EXISTS shop_order");
    DB.execute(IntegrationSamples.ORDERS_DDL);
    dataSource = DB.dataSource();
    store = DB.newStore();
    table = store.table();
  }

  @AfterEach
  void tearDown() {
    if (store != null) {
      DB.dropStore(store);
      DB.execute("DROP TABLE IF EXISTS shop_order");
    }
  }

  @Test
  void jooqOnASpringManagedDataSourceCommitsTheEventWithTheOrderAndRollsBothBack() throws SQLException {
    PlatformTransactionManager transactions = new DataSourceTransactionManager(dataSource);
    DSLContext db = DSL.using(new TransactionAwareDataSourceProxy(dataSource), SQLDialect.POSTGRES);
    TransactionalOutbox outbox = new TransactionalOutbox(store, dataSource);
    TransactionTemplate tx = new TransactionTemplate(transactions);

    tx.executeWithoutResult(status -> {
      db.insertInto(table("shop_order"), field("id"), field("total")).values("o-1", 100).execute();
      outbox.append(event("o-1", 100));
    });
    assertThat(orders()).containsExactly("o-1");
    assertThat(events()).containsExactly("o-1");

    assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
      db.insertInto(table("shop_order"), field("id"), field("total")).values("o-1", 200).execute();
      outbox.append(event("o-1", 200));
    })).hasStackTraceContaining("shop_order_pk");
    assertThat(orders()).containsExactly("o-1");
    assertThat(events()).containsExactly("o-1");
  }

  @Test
  void jpaUnderJpaTransactionManagerCommitsTheEventWithTheOrderAndRollsBothBack() throws SQLException {
    LocalContainerEntityManagerFactoryBean factory = new LocalContainerEntityManagerFactoryBean();
    factory.setDataSource(dataSource);
    factory.setJpaVendorAdapter(new HibernateJpaVendorAdapter());
    factory.setManagedTypes(org.springframework.orm.jpa.persistenceunit.PersistenceManagedTypes.of(
        ShopOrder.class.getName()));
    factory.afterPropertiesSet();
    try {
      EntityManagerFactory emf = factory.getObject();
      PlatformTransactionManager transactions = new JpaTransactionManager(emf);
      EntityManager em = SharedEntityManagerCreator.createSharedEntityManager(emf);
      TransactionalOutbox outbox = new TransactionalOutbox(store, dataSource);
      TransactionTemplate tx = new TransactionTemplate(transactions);

      tx.executeWithoutResult(status -> {
        em.persist(new ShopOrder("o-1", 100));
        outbox.append(event("o-1", 100));
      });
      assertThat(orders()).containsExactly("o-1");
      assertThat(events()).containsExactly("o-1");

      assertThatThrownBy(() -> tx.executeWithoutResult(status -> {
        em.persist(new ShopOrder("o-1", 200));
        outbox.append(event("o-1", 200));
      })).hasStackTraceContaining("shop_order_pk");
      assertThat(orders()).containsExactly("o-1");
      assertThat(events()).containsExactly("o-1");
    } finally {
      factory.destroy();
    }
  }

  private static OutboxEvent event(String orderId, long total) {
    return OutboxEvent.builder().aggregate("order", orderId).topic("order.placed")
        .payload("{\"total\":" + total + "}").build();
  }

  private List<String> orders() throws SQLException {
    return column("SELECT id FROM shop_order ORDER BY id");
  }

  /** The aggregate ids of the stored events. */
  private List<String> events() throws SQLException {
    return column("SELECT aggregate_id FROM " + table + " ORDER BY created_at");
  }

  private List<String> column(String sql) throws SQLException {
    List<String> values = new ArrayList<>();
    try (Connection c = dataSource.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery(sql)) {
      while (rs.next()) {
        values.add(rs.getString(1));
      }
    }
    return values;
  }
}
