package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.InMemoryOutboxStore;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxAppender;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxException;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Producer code written against {@link OutboxAppender} runs unchanged on the in-memory store and on PostgreSQL. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class OutboxAppenderTest {
  /** A producer as users write it: it knows the interface only. */
  record OrderService(OutboxAppender outbox) {
    void place(String orderId, int lines) {
      outbox.append(OutboxEvent.builder().aggregate("order", orderId).topic("order.created")
          .payload("{\"lines\":" + lines + "}").build());
    }

    void cancelAll(List<String> orderIds) {
      outbox.append(orderIds.stream().map(id -> OutboxEvent.builder().aggregate("order", id)
          .topic("order.cancelled").payload("{}").build()).toList());
    }
  }

  private final ThreadLocal<Connection> current = new ThreadLocal<>();
  private HikariDataSource dataSource;
  private JdbcOutboxStore store;
  private String table;

  @BeforeAll
  void connect() {
    dataSource = TestDatabase.POSTGRES.dataSource(2, null);
    table = TestDatabase.uniqueName("outbox_appender");
    store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
  }

  @AfterAll
  void disconnect() {
    if (dataSource != null) {
      TestDatabase.dropOutbox(dataSource, table);
      dataSource.close();
    }
  }

  @Test
  void theInMemoryStoreStandsInForTests() {
    InMemoryOutboxStore memory = new InMemoryOutboxStore();
    OrderService service = new OrderService(memory);

    service.place("42", 3);
    service.cancelAll(List.of("7", "8"));

    assertThat(memory.countByStatus()).containsEntry(OutboxStatus.PENDING, 3L);
  }

  @Test
  void theJdbcAppenderJoinsTheCurrentTransaction() throws Exception {
    OrderService service = new OrderService(JdbcOutboxAppender.of(store, current::get));
    long before = store.countByStatus().get(OutboxStatus.PENDING);

    inTransaction(true, () -> {
      service.place("42", 3);
      service.cancelAll(List.of("7", "8"));
    });
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.PENDING, before + 3);

    inTransaction(false, () -> service.place("43", 1));
    assertThat(store.countByStatus()).containsEntry(OutboxStatus.PENDING, before + 3);
  }

  @Test
  void outsideATransactionTheAppenderRefusesWithTheFix() throws Exception {
    OrderService service = new OrderService(JdbcOutboxAppender.of(store, current::get));

    assertThatThrownBy(() -> service.place("1", 1)).isInstanceOf(OutboxException.class)
        .hasMessage("no transaction in progress: the current connection is null. Append inside a transaction,"
            + " on the connection that also writes the business change");
    try (Connection c = dataSource.getConnection()) {
      current.set(c);
      assertThatThrownBy(() -> service.place("1", 1)).isInstanceOf(OutboxException.class)
          .hasMessageStartingWith("append needs the caller's transaction, but the connection is in auto-commit mode");
    } finally {
      current.remove();
    }
    assertThatThrownBy(() -> JdbcOutboxAppender.of(store, null)).isInstanceOf(InvalidConfigurationException.class)
        .hasMessage("currentConnection is required: JdbcOutboxAppender.of(store, () -> connectionOfTheCurrentTransaction)");
  }

  private void inTransaction(boolean commit, Runnable work) throws Exception {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      current.set(c);
      work.run();
      if (commit) {
        c.commit();
      } else {
        c.rollback();
      }
    } finally {
      current.remove();
    }
  }
}
