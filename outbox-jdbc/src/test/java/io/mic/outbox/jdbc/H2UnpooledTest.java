package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStatus;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.UUID;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;

/**
 * H2 without a pool: every connection really closes, including the one that created the schema. (H2 2.4
 * evaluates a CHECK constraint in the session that created it, so a CHECK in the DDL broke every insert
 * made after that connection closed; the H2 DDL has none.)
 */
class H2UnpooledTest {
  @Test
  void schemaCreatedOnAClosedConnectionTakesAppendsAndDispatch() throws SQLException {
    JdbcDataSource ds = new JdbcDataSource();
    ds.setURL("jdbc:h2:mem:unpooled-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
    JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(ds).build();
    store.createSchema();
    JdbcInbox inbox = JdbcInbox.builder().dataSource(ds).build();
    inbox.createSchema();

    OutboxEvent e = OutboxEvent.builder().aggregate("order", "1").topic("order.created").payload("{}").build();
    try (Connection c = ds.getConnection()) {
      c.setAutoCommit(false);
      store.append(c, e);
      assertThat(inbox.tryRecord(c, "billing", e.id().toString())).isTrue();
      c.commit();
    }
    assertThat(OutboxDispatcher.builder().store(store).dispatchFn(x -> {}).useClaim(true).build()
        .dispatchOnce().dispatched()).isEqualTo(1);
    assertThat(store.find(e.id()).orElseThrow().status()).isEqualTo(OutboxStatus.DISPATCHED);
  }
}
