package io.mic.outbox.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.OutboxStore;
import io.mic.outbox.testkit.OutboxStoreContractTest;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;

/** The core contract on a real database, each test with its own table. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class JdbcContractTest extends OutboxStoreContractTest {
  protected HikariDataSource dataSource;
  private final List<String> tables = new ArrayList<>();
  /** The pool of the test's store when it holds claims in transactions, closed after the test. */
  private HikariDataSource storePool;
  private JdbcOutboxStore jdbc;

  protected abstract TestDatabase database();

  /** Runs on every new connection; an odd session time zone, for example. */
  protected String connectionInitSql() {
    return null;
  }

  /** The store's options beyond its table: {@code deleteOnDispatch}, {@code transactionalClaims}. */
  protected JdbcOutboxStore.Builder storeOptions(JdbcOutboxStore.Builder builder) {
    return builder;
  }

  /**
   * A store whose claims are held by transactions ({@code claimsWriteLeases()} false) gets a pool of its own for
   * each test, closed after the test as a process's end closes its connections, which ends the claims it still
   * holds; and a statement that waits for a held claim's row fails the test instead of waiting for the claim.
   */
  private boolean holdsClaims() {
    return !claimsWriteLeases();
  }

  @BeforeAll
  void connect() {
    dataSource = database().dataSource(10, connectionInitSql());
  }

  private HikariDataSource storePool() {
    String initSql = connectionInitSql();
    return database().dataSource(10, (initSql == null ? "" : initSql + "; ") + "SET lock_timeout = '5s'");
  }

  @AfterAll
  void disconnect() {
    dataSource.close();
  }

  @AfterEach
  void dropTables() {
    closeBatches();
    if (storePool != null) {
      storePool.close();
      storePool = null;
    }
    tables.forEach(t -> TestDatabase.dropOutbox(dataSource, t));
    tables.clear();
  }

  @Override
  protected OutboxStore newStore() {
    String table = TestDatabase.uniqueName("outbox_ct");
    tables.add(table);
    if (holdsClaims() && storePool == null) {
      storePool = storePool();
    }
    jdbc = storeOptions(JdbcOutboxStore.builder().dataSource(storePool != null ? storePool : dataSource)
        .table(table)).build();
    beforeCreateSchema(table);
    jdbc.createSchema();
    return jdbc;
  }

  /** Runs before createSchema() on each new table; an older schema to be upgraded, for example. */
  protected void beforeCreateSchema(String table) {}

  @Override
  protected void append(List<OutboxEvent> events) {
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      jdbc.append(c, events);
      c.commit();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public void redriveDeadLetter(UUID id) {
    assertThat(OutboxDeadLetters.builder().store(jdbc).build().redrive(id)).as("redrive of %s", id).isTrue();
  }

  @Override
  public void purgeDeadLetter(UUID id) {
    assertThat(OutboxDeadLetters.builder().store(jdbc).build().purgeDeadLetters(DeadLetterQuery.builder()
        .aggregate("order", store.find(id).orElseThrow().aggregateId()).build())).isEqualTo(1);
  }

  @Override
  protected void elapse(Duration d) {
    if (holdsClaims()) {
      StoredTimes.shiftUnlocked(dataSource, jdbc, d);
    } else {
      StoredTimes.shift(dataSource, jdbc, d);
    }
  }
}
