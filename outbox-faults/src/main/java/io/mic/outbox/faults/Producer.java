package io.mic.outbox.faults;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;

/**
 * Appends events the way an application does, while faults hit the dispatchers: each thread owns its
 * aggregates and numbers their events 1, 2, 3 …; a transaction appends one event to each of several
 * aggregates. A transaction whose commit failed is looked up once the database answers again: committed
 * (its events exist) or appended again, the same events with the same ids. So the list of committed events
 * is exact even across database crashes.
 */
public final class Producer implements AutoCloseable {
  private final DataSource dataSource;
  private final JdbcOutboxStore store;
  private final int aggregatesPerTransaction;
  private final long pauseMillis;
  private final List<Produced> committed = new CopyOnWriteArrayList<>();
  private final List<Thread> threads = new ArrayList<>();
  private final AtomicInteger poisonLeft;
  private final AtomicLong failedCommits = new AtomicLong();
  private volatile boolean running = true;

  /**
   * @param threads producer threads, each with {@code aggregatesPerThread} aggregates of its own
   * @param poison how many poison events to inject, spread over the run
   */
  public Producer(DataSource dataSource, JdbcOutboxStore store, long seed, int threads, int aggregatesPerThread,
      int aggregatesPerTransaction, long pauseMillis, int poison) {
    this.dataSource = dataSource;
    this.store = store;
    this.aggregatesPerTransaction = aggregatesPerTransaction;
    this.pauseMillis = pauseMillis;
    this.poisonLeft = new AtomicInteger(poison);
    for (int t = 0; t < threads; t++) {
      List<String> aggregates = new ArrayList<>();
      for (int a = 0; a < aggregatesPerThread; a++) {
        aggregates.add("p" + t + "-a" + a);
      }
      Random random = new Random(seed * 31 + t);
      Thread thread = new Thread(() -> produce(aggregates, random), "producer-" + t);
      thread.setDaemon(true);
      this.threads.add(thread);
    }
  }

  public Producer start() {
    threads.forEach(Thread::start);
    return this;
  }

  private void produce(List<String> aggregates, Random random) {
    long[] seq = new long[aggregates.size()];
    int transactions = 0;
    while (running) {
      List<Integer> picked = new ArrayList<>();
      while (picked.size() < Math.min(aggregatesPerTransaction, aggregates.size())) {
        int i = random.nextInt(aggregates.size());
        if (!picked.contains(i)) {
          picked.add(i);
        }
      }
      transactions++;
      boolean poisonHere = transactions % 7 == 3 && poisonLeft.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
      List<OutboxEvent> events = new ArrayList<>();
      List<Produced> produced = new ArrayList<>();
      for (int k = 0; k < picked.size(); k++) {
        int i = picked.get(k);
        boolean poison = poisonHere && k == 0;
        OutboxEvent e = Workload.event(aggregates.get(i), ++seq[i], poison);
        events.add(e);
        produced.add(new Produced(e.id(), aggregates.get(i), seq[i], poison));
      }
      commitSurely(events);
      committed.addAll(produced);
      pause(pauseMillis);
    }
  }

  /** Commits these events, however many tries and database outages it takes (or until {@link #close()}). */
  private void commitSurely(List<OutboxEvent> events) {
    boolean mayExist = false;
    while (true) {
      try {
        if (mayExist && exist(events)) {
          return;
        }
        try (Connection c = dataSource.getConnection()) {
          c.setAutoCommit(false);
          store.append(c, events);
          c.commit();
          return;
        }
      } catch (SQLException | RuntimeException e) {
        failedCommits.incrementAndGet();
        mayExist = true; // the commit may have reached the server before the connection broke
        pause(100);
      }
    }
  }

  private boolean exist(List<OutboxEvent> events) throws SQLException {
    try (Connection c = dataSource.getConnection();
        PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + store.table() + " WHERE id = ANY(?)")) {
      c.setAutoCommit(true);
      Array ids = c.createArrayOf("uuid", events.stream().map(OutboxEvent::id).toArray());
      ps.setArray(1, ids);
      try (ResultSet rs = ps.executeQuery()) {
        rs.next();
        return rs.getLong(1) == events.size();
      }
    }
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** Every event committed so far. */
  public List<Produced> committed() {
    return List.copyOf(committed);
  }

  public Set<UUID> poisonIds() {
    Set<UUID> ids = new HashSet<>();
    committed.stream().filter(Produced::poison).forEach(p -> ids.add(p.id()));
    return ids;
  }

  /** Commits that failed and were looked up or retried (database faults). */
  public long failedCommits() {
    return failedCommits.get();
  }

  /** Stops producing; waits for the transactions in progress to end. */
  @Override
  public void close() throws InterruptedException {
    running = false;
    for (Thread t : threads) {
      t.join(60_000);
    }
  }
}
