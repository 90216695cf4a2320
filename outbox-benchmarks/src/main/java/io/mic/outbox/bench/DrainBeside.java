package io.mic.outbox.bench;

import io.mic.outbox.DispatchResult;
import io.mic.outbox.OutboxDispatcher;
import io.mic.outbox.OutboxListener;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.function.LongSupplier;

/**
 * A drain at full speed with a retention call beside it ({@link PartitionRetentionBenchmark} {@code --drain}):
 * one dispatcher drains the table's pending events ({@link BenchSupport#drainDispatcher}); once a quarter of them
 * went, the retention runs on another thread. Each pass of the drain (claim, publish, mark of one batch) is
 * placed during the retention (it overlapped the call) or outside it, and the drain's rate is given for both: the
 * passes outside (before the retention started and after it ended) are the baseline, the same drain on the same
 * table. A rate is the events of its passes over the sum of their times.
 *
 * @param removed what the retention returned
 * @param retentionSeconds the retention call's wall time
 * @param overlapSeconds how long the drain ran while the retention did
 * @param alone events/s of the passes that did not overlap the retention
 * @param during events/s of the passes that overlapped it (NaN: none)
 * @param passAloneP50 the median pass outside the retention, in ms
 * @param longestDuring the longest pass that overlapped the retention, in ms
 */
record DrainBeside(long removed, double retentionSeconds, double overlapSeconds, double alone, double during,
    double passAloneP50, double longestDuring) {

  /** One pass: when it started and ended ({@code System.nanoTime()}) and the events it dispatched. */
  private record Pass(long start, long end, int events) {
    double millis() {
      return (end - start) / 1e6;
    }
  }

  /** Drains all {@code pending} events of {@code store}, {@code retention} running beside from the first quarter on. */
  static DrainBeside run(JdbcOutboxStore store, int pending, LongSupplier retention) {
    List<Pass> passes = new ArrayList<>(); // only the draining thread touches it: the dispatcher is synchronous
    CountDownLatch quarter = new CountDownLatch(1);
    OutboxDispatcher dispatcher = BenchSupport.drainDispatcher(store).listener(new OutboxListener() {
      private int done;

      @Override public void onBatch(DispatchResult result, Duration elapsed) {
        long end = System.nanoTime();
        passes.add(new Pass(end - elapsed.toNanos(), end, result.dispatched()));
        done += result.dispatched();
        if (done >= pending / 4) {
          quarter.countDown();
        }
      }
    }).build();
    ExecutorService retainer = Executors.newSingleThreadExecutor(r -> new Thread(r, "bench-retention"));
    try {
      Future<long[]> call = retainer.submit(() -> {
        quarter.await();
        long t0 = System.nanoTime();
        long removed = retention.getAsLong();
        return new long[] {t0, System.nanoTime(), removed};
      });
      BenchSupport.drainAll(dispatcher, pending);
      long[] r = call.get();
      return of(passes, r[0], r[1], r[2]);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while the retention ran", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("the retention failed", e.getCause());
    } finally {
      retainer.shutdownNow();
    }
  }

  private static DrainBeside of(List<Pass> passes, long start, long end, long removed) {
    List<Pass> during = passes.stream().filter(p -> p.end() > start && p.start() < end).toList();
    List<Pass> alone = passes.stream().filter(p -> !during.contains(p)).toList();
    long drainEnd = passes.get(passes.size() - 1).end();
    List<Double> aloneMillis = new ArrayList<>(alone.stream().map(Pass::millis).toList());
    return new DrainBeside(removed, (end - start) / 1e9, (Math.min(end, drainEnd) - start) / 1e9, rate(alone),
        rate(during), aloneMillis.isEmpty() ? Double.NaN : BenchSupport.median(aloneMillis),
        during.stream().mapToDouble(Pass::millis).max().orElse(Double.NaN));
  }

  /** The events of {@code passes} over the sum of their times; NaN for none. */
  private static double rate(List<Pass> passes) {
    if (passes.isEmpty()) {
      return Double.NaN;
    }
    int events = passes.stream().mapToInt(Pass::events).sum();
    return events / (passes.stream().mapToLong(p -> p.end() - p.start()).sum() / 1e9);
  }

  /** The report of {@code rounds}, each holding one result per retention, labelled by {@code labels}. */
  static String report(int rows, int pending, List<DrainBeside[]> rounds, String[] labels) {
    StringBuilder out = new StringBuilder("# Retention beside a drain: partition drop against batched delete\n\n")
        .append(String.format("%,d DISPATCHED rows created two days ago, then %,d pending events drained by one"
            + " dispatcher (claim mode, throughput, batches of %d); retention starts once a quarter of them went."
            + " Baseline: the same drain's passes that did not overlap the retention.%n%n", rows, pending,
            BenchSupport.DRAIN_BATCH))
        .append("| round | retention | removed | retention s | drain overlapped s | drain alone (events/s)"
            + " | during | during / alone | pass p50 alone (ms) | longest pass during (ms) |\n")
        .append("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int i = 0; i < rounds.size(); i++) {
      for (int k = 0; k < labels.length; k++) {
        DrainBeside d = rounds.get(i)[k];
        out.append(String.format("| %d | %s | %,d | %.2f | %.2f | %s | %s | %.2f | %.1f | %.1f |%n", i + 1,
            labels[k], d.removed(), d.retentionSeconds(), d.overlapSeconds(), perSecond(d.alone()),
            perSecond(d.during()), d.during() / d.alone(), d.passAloneP50(), d.longestDuring()));
      }
    }
    return out.append("\nload average ").append(BenchSupport.loadAverage()).append('\n').toString();
  }

  private static String perSecond(double rate) {
    return Double.isNaN(rate) ? "–" : String.format("%,.0f", rate);
  }
}
