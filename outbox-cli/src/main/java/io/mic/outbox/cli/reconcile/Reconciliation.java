package io.mic.outbox.cli.reconcile;

import io.mic.outbox.BrokerScan;
import io.mic.outbox.jdbc.JdbcInbox;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import io.mic.outbox.jdbc.OutboxMaintenance;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * Compares, for one topic and an inclusive range of {@code created_at}, the outbox with the broker, a
 * consumer's inbox and the domain, and reports each difference with a count and sample ids.
 *
 * <pre>{@code
 * ReconcileReport report = Reconciliation.builder().dataSource(ds).store(store)
 *     .topic("order.created").range(from, to)
 *     .broker(new JetStreamScan(nats, "ORDERS", null))   // or new KafkaTopicScan("kafka:9092", null, Map.of())
 *     .inbox("outbox_inbox", "billing-service")
 *     .domainSql("SELECT id FROM orders WHERE created_at BETWEEN '2026-09-29 08:00' AND '2026-09-29 10:00'")
 *     .build().run();
 * }</pre>
 *
 * <p>The outbox events of the range are read into memory (ids only); the broker is scanned from
 * {@code from} less {@link BrokerScan#CLOCK_MARGIN} to its end, since an event is published after it is
 * created, and messages of events outside the range are left out of every count. The inbox and the domain query
 * are read from the outbox's database.
 */
public final class Reconciliation {
  public static final int SAMPLE_SIZE = 10;
  public static final Duration DEFAULT_LIVE_THRESHOLD = Duration.ofMinutes(5);
  private static final int VANISHED_PROBES = 100;
  private static final String NO_LONGER_HELD = "its store deletes rows at dispatch (deleteOnDispatch), or they were"
      + " purged or archived, so the broker and inbox comparisons were not made; reconcile a range whose"
      + " dispatched events the table still keeps";

  private final DataSource dataSource;
  private final JdbcOutboxStore store;
  private final String topic;
  private final Instant from;
  private final Instant to;
  private final Duration liveThreshold;
  private final BrokerScan broker;
  private final String brokerUnavailable;
  private final String inboxTable;
  private final String consumer;
  private final DomainQuery domainQuery;

  private Reconciliation(Builder b) {
    this.dataSource = b.dataSource;
    this.store = b.store;
    this.topic = b.topic;
    this.from = b.from;
    this.to = b.to;
    this.liveThreshold = b.liveThreshold;
    this.broker = b.broker;
    this.brokerUnavailable = b.brokerUnavailable;
    this.inboxTable = b.inboxTable;
    this.consumer = b.consumer;
    this.domainQuery = b.domainSql == null ? null : new DomainQuery(b.domainSql);
  }

  public static Builder builder() {
    return new Builder();
  }

  private record Row(String id, String status, String aggregateId, boolean old) {}

  public ReconcileReport run() throws Exception {
    List<Row> rows = outboxRows();
    Set<String> dispatched = ids(rows, r -> r.status().equals("DISPATCHED"));
    Set<String> inRange = ids(rows, r -> true);
    List<ReconcileReport.Difference> differences = new ArrayList<>();
    List<String> notes = new ArrayList<>();
    differences.add(diff(ReconcileReport.STILL_LIVE, "PENDING or PROCESSING longer than " + liveThreshold,
        ids(rows, r -> r.old() && (r.status().equals("PENDING") || r.status().equals("PROCESSING")))));
    differences.add(diff(ReconcileReport.DEAD_LETTERS, "in the DLQ", ids(rows, r -> r.status().equals("DLQ"))));
    long onBroker = -1;
    Set<String> brokerIds = null;
    boolean comparable = true;
    if (broker != null) {
      Set<String> all = broker.eventIds(topic, from);
      brokerIds = new HashSet<>(all);
      brokerIds.retainAll(inRange); // messages of events created outside the range are not compared
      onBroker = brokerIds.size();
      long gone = vanished(all, inRange);
      if (gone > 0) {
        comparable = false;
        notes.add("cannot compare: " + atLeast(gone) + " message(s) on " + broker + " are of events created in the range that the outbox table"
            + " no longer holds: " + NO_LONGER_HELD);
      }
    }
    if (broker != null && comparable) {
      differences.add(diff(ReconcileReport.DISPATCHED_NOT_ON_BROKER, "DISPATCHED in the outbox, absent from "
          + broker, minus(dispatched, brokerIds)));
      differences.add(diff(ReconcileReport.ON_BROKER_NOT_MARKED, "on " + broker + " but not DISPATCHED in the"
          + " outbox (a mark was lost)", minus(brokerIds, dispatched)));
    } else if (brokerUnavailable != null) {
      notes.add(brokerUnavailable);
    }
    if (consumer != null && comparable) {
      Set<String> processed = inboxIds();
      long gone = brokerIds == null ? vanished(processed, inRange) : 0; // with a broker, its messages were checked
      if (gone > 0) {
        comparable = false;
        notes.add("cannot compare: " + atLeast(gone) + " event(s) in the inbox of consumer " + consumer + " were created in the range but the"
            + " outbox table no longer holds them: " + NO_LONGER_HELD);
      } else {
        Set<String> delivered = brokerIds != null ? brokerIds : dispatched;
        differences.add(diff(ReconcileReport.NOT_PROCESSED_BY_CONSUMER, (brokerIds != null ? "on the broker"
            : "DISPATCHED") + " but not in the inbox of consumer " + consumer, minus(delivered, processed)));
      }
    }
    if (domainQuery != null && comparable) { // the rows of the events it would look for are gone too
      Set<String> aggregates = rows.stream().map(Row::aggregateId).collect(Collectors.toCollection(HashSet::new));
      differences.add(diff(ReconcileReport.DOMAIN_WITHOUT_EVENT, "returned by the domain query, without an event"
          + " of the topic in the range", minus(domainQuery.ids(dataSource), aggregates)));
    }
    return new ReconcileReport(topic, from, to, dispatched.size(), ids(rows, r -> r.status().equals("PENDING")
        || r.status().equals("PROCESSING")).size(), ids(rows, r -> r.status().equals("DLQ")).size(), onBroker,
        List.copyOf(differences), List.copyOf(notes), comparable);
  }

  private List<Row> outboxRows() {
    List<Row> rows = new ArrayList<>();
    for (OutboxMaintenance.EventState e : OutboxMaintenance.builder().store(store).build()
        .eventsCreatedBetween(topic, from, to)) {
      rows.add(new Row(e.id().toString(), e.status().name(), e.aggregateId(), e.age().compareTo(liveThreshold) > 0));
    }
    return rows;
  }

  private Set<String> inboxIds() {
    return JdbcInbox.builder().dataSource(dataSource).table(inboxTable).dialect(store.dialect()).build()
        .recordedEventIds(consumer);
  }

  /**
   * Of {@code ids} read from the broker or an inbox, how many are of events created in the range (by the time
   * in their UUIDv7) that the outbox table no longer holds: rows deleted at dispatch ({@code deleteOnDispatch}),
   * purged or archived. Comparing with such a table would report nothing missing for events it cannot see.
   * At most {@value #VANISHED_PROBES} are looked up one by one: one gone is enough to say the comparison cannot
   * be made, so the count is a lower bound beyond that.
   */
  private long vanished(Set<String> ids, Set<String> inRange) {
    long from = this.from.toEpochMilli();
    long to = this.to.toEpochMilli();
    List<UUID> candidates = ids.stream().filter(id -> !inRange.contains(id)).map(Reconciliation::uuid)
        .filter(u -> u != null && u.version() == 7 && (u.getMostSignificantBits() >>> 16) >= from
            && (u.getMostSignificantBits() >>> 16) <= to)
        .toList();
    long gone = candidates.stream().limit(VANISHED_PROBES).filter(u -> store.find(u).isEmpty()).count();
    return gone;
  }

  private static String atLeast(long gone) {
    return gone < VANISHED_PROBES ? Long.toString(gone) : "at least " + gone;
  }

  private static UUID uuid(String id) {
    try {
      return UUID.fromString(id);
    } catch (IllegalArgumentException e) {
      return null; // not an id this library made
    }
  }

  private static Set<String> ids(List<Row> rows, Predicate<Row> keep) {
    return rows.stream().filter(keep).map(Row::id).collect(Collectors.toCollection(HashSet::new));
  }

  private static Set<String> minus(Collection<String> a, Set<String> b) {
    Set<String> out = new TreeSet<>(a); // sorted: the sample is stable from run to run
    out.removeAll(b);
    return out;
  }

  private static ReconcileReport.Difference diff(String name, String description, Set<String> ids) {
    List<String> sorted = new ArrayList<>(new TreeSet<>(ids));
    return new ReconcileReport.Difference(name, description, sorted.size(),
        List.copyOf(sorted.subList(0, Math.min(SAMPLE_SIZE, sorted.size()))));
  }

  /** The domain query failed on the database (it may not write: it runs read-only); the message is the database's. */
  public static final class DomainQueryFailedException extends RuntimeException {
    DomainQueryFailedException(java.sql.SQLException cause) {
      super(cause.getMessage(), cause);
    }
  }

  /** Builds a {@link Reconciliation}; dataSource, store, topic, from and to are required. */
  public static final class Builder {
    private DataSource dataSource;
    private JdbcOutboxStore store;
    private String topic;
    private Instant from;
    private Instant to;
    private Duration liveThreshold = DEFAULT_LIVE_THRESHOLD;
    private BrokerScan broker;
    private String brokerUnavailable;
    private String inboxTable = JdbcInbox.DEFAULT_TABLE;
    private String consumer;
    private String domainSql;

    private Builder() {}

    /** The outbox's database (the inbox and domain query are read there too). */
    public Builder dataSource(DataSource dataSource) {
      this.dataSource = dataSource;
      return this;
    }

    public Builder store(JdbcOutboxStore store) {
      this.store = store;
      return this;
    }

    public Builder topic(String topic) {
      this.topic = topic;
      return this;
    }

    /** The range of {@code created_at}, both ends included. */
    public Builder range(Instant from, Instant to) {
      this.from = from;
      this.to = to;
      return this;
    }

    /** How long an event may stay PENDING or PROCESSING before it counts as a difference (default 5 min). */
    public Builder liveThreshold(Duration liveThreshold) {
      this.liveThreshold = liveThreshold;
      return this;
    }

    /** The broker to compare with; without one, the broker differences are not computed. */
    public Builder broker(BrokerScan broker) {
      this.broker = broker;
      return this;
    }

    /** Says in the report why the broker was not compared (e.g. RabbitMQ keeps no log to scan). */
    public Builder brokerUnavailable(String why) {
      this.brokerUnavailable = why;
      return this;
    }

    /** The inbox table and the consumer whose processed events are compared. */
    public Builder inbox(String inboxTable, String consumer) {
      this.inboxTable = inboxTable;
      this.consumer = consumer;
      return this;
    }

    /**
     * A query whose first column is the id of each aggregate that should have an event in the range: one
     * statement starting with {@code SELECT} or {@code WITH}, run in a read-only transaction that is rolled back.
     */
    public Builder domainSql(String domainSql) {
      this.domainSql = domainSql;
      return this;
    }

    public Reconciliation build() {
      Objects.requireNonNull(dataSource, "dataSource");
      Objects.requireNonNull(store, "store");
      if (topic == null || topic.isBlank()) {
        throw new IllegalArgumentException("topic is required: the topic whose events are reconciled");
      }
      if (from == null || to == null || from.isAfter(to)) {
        throw new IllegalArgumentException("range is required with from <= to, was " + from + " .. " + to);
      }
      if (domainSql != null) {
        new DomainQuery(domainSql); // refused here, before anything is read
      }
      if (liveThreshold.isNegative()) {
        throw new IllegalArgumentException("liveThreshold must be >= 0, was " + liveThreshold);
      }
      return new Reconciliation(this);
    }
  }
}
