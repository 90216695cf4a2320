package io.mic.outbox.bench;

import io.mic.outbox.DispatchResult;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxMaintenance;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import javax.sql.DataSource;

/**
 * Retention at scale: what a purge costs a drain running at full speed beside it. A table made by
 * {@code createSchema()} holds {@code dispatched} rows two days old and, behind them in the primary key,
 * {@code pending} rows due now (time-ordered ids, as the store writes them, so the purge walks the key as
 * it does in production). One dispatcher drains the pending rows with the drain scenario's settings (claim
 * mode, throughput mode, batches of 500, a publisher that does nothing), once alone and once while
 * {@link OutboxMaintenance#purgeDispatchedOlderThan} deletes the dispatched rows, in its default batches, on
 * another thread and connection. Each case loads its own table and runs {@code VACUUM ANALYZE} on it (a
 * server with autovacuum off would otherwise plan on no statistics), so both start from the same state;
 * rounds alternate which case runs first.
 */
final class PurgeDrainScenario {
  static final String ALONE = "purge-drain: drain beside the retained dispatched rows (baseline)";
  static final String DURING = "purge-drain: the same drain while OutboxMaintenance purges them";
  private static final Duration RETENTION = Duration.ofHours(1);

  private final DataSource dataSource;
  private final int dispatched;
  private final int pending;
  private final int aggregates;

  PurgeDrainScenario(DataSource dataSource, int dispatched, int pending, int aggregates) {
    this.dataSource = dataSource;
    this.dispatched = dispatched;
    this.pending = pending;
    this.aggregates = aggregates;
  }

  /** A drain's events/s and the time of its passes (claim + publish + mark of one batch), in ms. */
  record Drain(double rate, double batchP50, double batchP99) {
    String describe() {
      return String.format("%,.0f events/s (passes of %d: p50 %.1f ms, p99 %.1f ms)", rate, BenchSupport.DRAIN_BATCH,
          batchP50, batchP99);
    }
  }

  /**
   * A drain beside the purge, and the purge: rows it deleted by the time the drain ended, seconds from its
   * start to the drain's end, rows it deleted in all, its seconds, and whether it was done before the drain.
   */
  record WithPurge(Drain drain, long purgedByDrainEnd, double drainSeconds, long purged, double purgeSeconds,
      boolean purgeFinishedFirst) {}

  /** One round: the drain alone, then the drain during the purge. */
  record Round(int number, Drain alone, WithPurge during) {}

  /**
   * Drains a small backlog with nothing retained, so that the first case measured does not pay for the JIT
   * and the driver's first statements: without it, the first round favoured whichever case ran second.
   */
  void warmUp() throws SQLException {
    int backlog = Math.min(pending, 10_000);
    onFreshTable(0, backlog, store -> drain(store, backlog));
  }

  /** Runs both cases, each on a table of its own, the drain alone first in odd rounds and second in even ones. */
  Round round(int number) throws SQLException {
    if (number % 2 == 1) {
      Drain alone = onFreshTable(dispatched, pending, store -> drain(store, pending));
      return new Round(number, alone, onFreshTable(dispatched, pending, this::drainDuringPurge));
    }
    WithPurge during = onFreshTable(dispatched, pending, this::drainDuringPurge);
    return new Round(number, onFreshTable(dispatched, pending, store -> drain(store, pending)), during);
  }

  /** The round's figures, for the report's notes. */
  String describe(Round r) {
    WithPurge p = r.during();
    String purge = p.purgeFinishedFirst()
        ? String.format("deleted all %,d rows in %.1f s (%,.0f rows/s), before the drain ended (%.1f s): the drain"
            + " ran partly alone, so --purge-rows should be larger", p.purged(), p.purgeSeconds(),
            p.purged() / p.purgeSeconds(), p.drainSeconds())
        : String.format("deleted %,d rows during the drain's %.1f s (%,.0f rows/s), then the other %,d alone at"
            + " %,.0f rows/s, %.1f s in all", p.purgedByDrainEnd(), p.drainSeconds(),
            p.purgedByDrainEnd() / p.drainSeconds(), p.purged() - p.purgedByDrainEnd(),
            (p.purged() - p.purgedByDrainEnd()) / (p.purgeSeconds() - p.drainSeconds()), p.purgeSeconds());
    return String.format("purge-drain round %d (%s first): %,d pending events drained beside %,d dispatched rows:"
        + " alone %s; during the purge %s; ratio %.2f. The purge (batches of %,d) %s. Load average %s.",
        r.number(), r.number() % 2 == 1 ? "alone" : "purge", pending, dispatched, r.alone().describe(),
        p.drain().describe(), p.drain().rate() / r.alone().rate(), OutboxMaintenance.DEFAULT_BATCH_SIZE, purge,
        BenchSupport.loadAverage());
  }

  /**
   * Runs {@code scenario} on a fresh table holding {@code dispatched} rows, then {@code pending} rows, vacuumed
   * and analysed; drops the table after.
   */
  private <T> T onFreshTable(int dispatched, int pending, Function<JdbcOutboxStore, T> scenario)
      throws SQLException {
    String table = "bench_purge_drain_" + UUID.randomUUID().toString().substring(0, 8);
    try {
      JdbcOutboxStore store = JdbcOutboxStore.builder().dataSource(dataSource).table(table).build();
      store.createSchema();
      try (Connection c = dataSource.getConnection(); Statement s = c.createStatement()) {
        BenchSupport.insertDispatched(s, table, dispatched);
        BenchSupport.insertPending(s, table, BenchSupport.V7, pending, aggregates);
        s.execute("VACUUM ANALYZE \"" + table + "\"");
      }
      return scenario.apply(store);
    } finally {
      BenchSupport.dropOutbox(dataSource, table);
    }
  }

  private Drain drain(JdbcOutboxStore store, int expected) {
    List<Double> passes = new ArrayList<>();
    double rate = BenchSupport.drainAll(BenchSupport.drainDispatcher(store).listener(new OutboxListener() {
      @Override public void onBatch(DispatchResult result, Duration elapsed) {
        passes.add(elapsed.toNanos() / 1e6); // on the draining thread: the dispatcher is synchronous
      }
    }).build(), expected);
    passes.sort(null);
    return passes.isEmpty() ? new Drain(rate, 0, 0)
        : new Drain(rate, BenchSupport.percentile(passes, 0.50), BenchSupport.percentile(passes, 0.99));
  }

  /** Starts the purge on a thread of its own, drains meanwhile, then waits for the purge to finish. */
  private WithPurge drainDuringPurge(JdbcOutboxStore store) {
    OutboxMaintenance maintenance = OutboxMaintenance.builder().store(store).build();
    AtomicLong purged = new AtomicLong();
    ExecutorService purger = Executors.newSingleThreadExecutor(r -> new Thread(r, "bench-purge"));
    try {
      long t0 = System.nanoTime();
      Future<Long> purgeEnd = purger.submit(() -> {
        maintenance.purgeDispatchedOlderThan(RETENTION, purged::set);
        return System.nanoTime();
      });
      Drain drain = drain(store, pending);
      long drainEnd = System.nanoTime();
      long byDrainEnd = purged.get();
      boolean finishedFirst = purgeEnd.isDone();
      long end = purgeEnd.get();
      if (purged.get() != dispatched) {
        throw new IllegalStateException("purged " + purged.get() + " of " + dispatched + " dispatched rows");
      }
      return new WithPurge(drain, byDrainEnd, (drainEnd - t0) / 1e9, purged.get(), (end - t0) / 1e9,
          finishedFirst);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the purge ran", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("the purge failed", e.getCause());
    } finally {
      purger.shutdownNow();
    }
  }
}
