package io.mic.outbox.examples;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.spring.TransactionalOutbox;
import io.mic.outbox.test.OutboxTestDatabase;
import jakarta.persistence.EntityManagerFactory;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;
import org.hibernate.jpa.HibernatePersistenceConfiguration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DelegatingDataSource;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;

/**
 * Runs the recipes of docs/integrations.md on PostgreSQL. The second order with the same id fails at
 * commit (the key is checked then), after its event was appended: that event must be rolled back with it.
 */
class IntegrationRecipesTest {
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
  void jooqCommitsTheEventWithTheOrderAndRollsBothBack() throws SQLException {
    IntegrationSamples.placeOrderWithJooq(dataSource, store, "o-1", 100);
    assertThat(orders()).containsExactly("o-1");
    assertThat(events()).containsExactly("o-1");

    assertThatThrownBy(() -> IntegrationSamples.placeOrderWithJooq(dataSource, store, "o-1", 200))
        .hasStackTraceContaining("shop_order_pk");
    assertThat(orders()).containsExactly("o-1");
    assertThat(events()).containsExactly("o-1");
  }

  @Test
  void jpaCommitsTheEventWithTheOrderAndRollsBothBack() throws SQLException {
    try (EntityManagerFactory emf = new HibernatePersistenceConfiguration("recipes")
        .managedClass(ShopOrder.class)
        .property("hibernate.connection.datasource", dataSource)
        .createEntityManagerFactory()) {
      IntegrationSamples.placeOrderWithJpa(emf, store, "o-1", 100);
      assertThat(orders()).containsExactly("o-1");
      assertThat(events()).containsExactly("o-1");

      assertThatThrownBy(() -> IntegrationSamples.placeOrderWithJpa(emf, store, "o-1", 200))
          .hasStackTraceContaining("shop_order_pk");
      assertThat(orders()).containsExactly("o-1");
      assertThat(events()).containsExactly("o-1");
    }
  }

  @Test
  void springCommitsTheEventWithTheOrderAndRollsBothBack() throws SQLException {
    try (AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext()) {
      // the pool is the test kit's, shared by the JVM: the context must not close it
      context.registerBean(DataSource.class, () -> new DelegatingDataSource(dataSource));
      context.registerBean(JdbcOutboxStore.class, () -> store);
      context.register(SpringApplication.class);
      context.refresh();
      ShopService orders = context.getBean(ShopService.class);

      orders.placeOrder("o-1", 100);
      assertThat(orders()).containsExactly("o-1");
      assertThat(events()).containsExactly("o-1");

      assertThatThrownBy(() -> orders.placeOrder("o-1", 200)).hasStackTraceContaining("shop_order_pk");
      assertThat(orders()).containsExactly("o-1");
      assertThat(events()).containsExactly("o-1");
    }
  }

  /** What the outbox-spring auto-configuration and Spring Boot would declare. */
  @Configuration(proxyBeanMethods = false)
  @EnableTransactionManagement
  static class SpringApplication {
    @Bean
    PlatformTransactionManager transactionManager(DataSource dataSource) {
      return new DataSourceTransactionManager(dataSource);
    }

    @Bean
    JdbcTemplate jdbcTemplate(DataSource dataSource) {
      return new JdbcTemplate(dataSource);
    }

    @Bean
    TransactionalOutbox transactionalOutbox(JdbcOutboxStore store, DataSource dataSource) {
      return new TransactionalOutbox(store, dataSource);
    }

    @Bean
    ShopService orderService(JdbcTemplate jdbc, TransactionalOutbox outbox) {
      return new ShopService(jdbc, outbox);
    }
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
