package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import java.sql.SQLException;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A read without claims leaves out every event in flight in the dispatcher, each id a parameter on MariaDB:
 * up to three batches per worker, so many workers or batches of 10,000 can put more ids in flight than a
 * statement prepared on the server can bind (65,535 parameters, with {@code useServerPrepStmts=true}).
 * MariaDB Connector/J sends such a statement as text instead of preparing it; this test holds the read to
 * that: it works, and leaves every id out.
 */
class MariaDbInFlightReadTest {
  /** More ids than a server-prepared statement of MariaDB can bind. */
  private static final int IN_FLIGHT = 70_000;

  private HikariDataSource dataSource;
  private String table;
  private JdbcOutboxStore store;

  @BeforeEach
  void createStore() {
    dataSource = TestDatabase.MARIADB.dataSourceWithUrlParameter("useServerPrepStmts=true", 1);
    table = TestDatabase.uniqueName("outbox_in_flight");
    store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
    store.createSchema();
  }

  @AfterEach
  void dropStore() {
    TestDatabase.dropOutbox(dataSource, table);
    dataSource.close();
  }

  @ParameterizedTest(name = "ordered: {0}")
  @ValueSource(booleans = {false, true})
  void aReadLeavesOutMoreEventsInFlightThanAStatementCanBind(boolean ordered) throws SQLException {
    List<OutboxEvent> events = TestDatabase.appendOrders(dataSource, store, 6);
    Set<UUID> inFlight = new LinkedHashSet<>();
    inFlight.add(events.get(0).id());
    inFlight.add(events.get(3).id());
    while (inFlight.size() < IN_FLIGHT) {
      inFlight.add(UUID.randomUUID());
    }

    List<OutboxEvent> read = store.fetchPending(10, ordered, Set.of(), inFlight);

    assertThat(read).extracting(OutboxEvent::id).containsExactly(events.get(1).id(), events.get(2).id(),
        events.get(4).id(), events.get(5).id());
  }
}
