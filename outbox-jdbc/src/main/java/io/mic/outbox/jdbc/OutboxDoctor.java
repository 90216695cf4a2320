package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.MessagePublisher;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What an on-call engineer checks first on a {@link JdbcOutboxStore}'s tables: each check one {@link Check} with
 * a verdict, the figure behind it and, unless it passed, the remedy. {@code mic-outbox doctor} prints them.
 *
 * <pre>{@code
 * OutboxDoctor doctor = OutboxDoctor.builder().store(store).build();
 * for (OutboxDoctor.Check check : doctor.checks()) {
 *   System.out.println(check.verdict() + " " + check.name() + ": " + check.figure());
 * }
 * doctor.destinations("nats", natsPublisher);   // can the broker take every topic with live events?
 * }</pre>
 *
 * <p>PostgreSQL answers every check; MariaDB and H2 those that apply to them, the others are
 * {@link Verdict#NOT_APPLICABLE}, never a pass. Each check runs its own short read-only queries; a check whose
 * query fails is a {@code FAIL} naming the error. docs/operations.md has each check's thresholds and remedies.
 * Immutable and thread-safe.
 */
public final class OutboxDoctor {
  /** Lag (age of the oldest live event) over which {@link #checks()} warns. */
  public static final Duration DEFAULT_MAX_LAG = Duration.ofMinutes(1);
  /** Age of the oldest open transaction over which {@link #checks()} warns. */
  public static final Duration DEFAULT_MAX_TRANSACTION_AGE = Duration.ofMinutes(5);
  /** Dead tuples (PostgreSQL) from which a high ratio is a warning: fewer cost nothing noticeable. */
  public static final long DEAD_TUPLES_WARNING = 10_000;
  /** Share of dead tuples among the table's row versions over which {@link #checks()} warns. */
  public static final double DEAD_TUPLE_RATIO_WARNING = 0.2;
  /** Largest {@code autovacuum_vacuum_scale_factor} that passes for a queue table (the server default is 0.2). */
  public static final double MAX_VACUUM_SCALE_FACTOR = 0.05;
  /** At most this many topics with live events are checked against a broker, the busiest first. */
  public static final int MAX_TOPICS = 1_000;

  /** How a check came out. */
  public enum Verdict {
    PASS, WARN, FAIL,
    /** The database has no such thing (autovacuum on MariaDB) or cannot tell (open transactions on H2). */
    NOT_APPLICABLE
  }

  /**
   * One check.
   *
   * @param name short and stable, e.g. {@code schema-version}, {@code lag}, {@code nats:order.created}
   * @param figure what was found, e.g. {@code 3 dead letter(s), the oldest 2h 5m old}
   * @param remedy what to do, or {@code null} when the check passed or does not apply
   */
  public record Check(String name, Verdict verdict, String figure, String remedy) {
    public Check {
      Objects.requireNonNull(name, "name");
      Objects.requireNonNull(verdict, "verdict");
      Objects.requireNonNull(figure, "figure");
    }

    static Check pass(String name, String figure) {
      return new Check(name, Verdict.PASS, figure, null);
    }

    static Check notApplicable(String name, String why) {
      return new Check(name, Verdict.NOT_APPLICABLE, why, null);
    }

    static Check warn(String name, String figure, String remedy) {
      return new Check(name, Verdict.WARN, figure, remedy);
    }

    static Check fail(String name, String figure, String remedy) {
      return new Check(name, Verdict.FAIL, figure, remedy);
    }
  }

  private final JdbcOutboxStore store;
  private final Duration maxLag;
  private final Duration maxTransactionAge;

  private OutboxDoctor(Builder b) {
    this.store = b.store;
    this.maxLag = b.maxLag;
    this.maxTransactionAge = b.maxTransactionAge;
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * The checks of the database, in this order: {@code schema-version}, {@code indexes}, {@code autovacuum},
   * {@code dead-tuples}, {@code oldest-transaction}, {@code lag}, {@code dead-letters}, {@code held-aggregates},
   * {@code pauses}, {@code partitions}.
   *
   * @throws OutboxStoreException the database cannot be reached at all
   */
  public List<Check> checks() {
    TableAccess access = store.access();
    TableChecks table = new TableChecks(store, access);
    PostgresHealth postgres = access.dialect instanceof PostgresDialect ? new PostgresHealth(access) : null;
    List<Check> checks = new ArrayList<>();
    checks.add(guarded("schema-version", table::schemaVersion));
    checks.add(guarded("indexes", () -> postgres != null ? postgres.invalidIndexesOr(table.indexes())
        : table.indexes()));
    checks.add(guarded("autovacuum", () -> postgres != null ? postgres.autovacuum()
        : Check.notApplicable("autovacuum", access.dialect.name() + " has no autovacuum: InnoDB purges old row"
            + " versions from its undo log, H2 keeps none")));
    checks.add(guarded("dead-tuples", () -> postgres != null ? postgres.deadTuples()
        : Check.notApplicable("dead-tuples", access.dialect.name() + " keeps no dead tuples in the table (old"
            + " row versions wait in the undo log for the oldest transaction: see oldest-transaction)")));
    checks.add(guarded("oldest-transaction", () -> postgres != null ? postgres.oldestTransaction(maxTransactionAge)
        : table.oldestTransaction(maxTransactionAge)));
    checks.add(guarded("lag", () -> table.lag(maxLag)));
    checks.add(guarded("dead-letters", table::deadLetters));
    checks.add(guarded("held-aggregates", table::heldAggregates));
    checks.add(guarded("pauses", table::pauses));
    checks.add(guarded("partitions", () -> postgres != null
        ? new PostgresPartitions(access, PostgresPartitions.MIN_INTERVAL).check()
        : Check.notApplicable("partitions", access.dialect.name() + " tables are not partitioned")));
    return checks;
  }

  /**
   * Whether {@code publisher}'s broker can take every topic with live ({@code PENDING} or {@code PROCESSING})
   * events, each asked with {@link MessagePublisher#checkDestination}: a JetStream stream captures its subject,
   * the RabbitMQ exchange exists, the Kafka topic exists. One check per topic, named
   * {@code <broker>:<topic>}, at most {@value #MAX_TOPICS}; a broker that cannot be asked is one {@code FAIL}.
   *
   * @param broker a short name for the check names, e.g. {@code nats}
   */
  public List<Check> destinations(String broker, MessagePublisher publisher) throws InterruptedException {
    Objects.requireNonNull(publisher, "publisher");
    return new Destinations(store.access(), broker).check(publisher);
  }

  /** {@code check}, or a {@code FAIL} naming the error when its queries fail. */
  private static Check guarded(String name, java.util.function.Supplier<Check> check) {
    try {
      return check.get();
    } catch (OutboxStoreException e) {
      return Check.fail(name, "cannot read: " + e.getMessage(), "check the role's rights on the table and the"
          + " system views (docs/operations.md, \"mic-outbox doctor\")");
    }
  }

  /** Builds an {@link OutboxDoctor}; {@code store} is required. */
  public static final class Builder {
    private JdbcOutboxStore store;
    private Duration maxLag = DEFAULT_MAX_LAG;
    private Duration maxTransactionAge = DEFAULT_MAX_TRANSACTION_AGE;

    private Builder() {}

    /** Required: the store whose tables are checked. */
    public Builder store(JdbcOutboxStore store) {
      this.store = store;
      return this;
    }

    /** The lag over which the {@code lag} check warns (default {@link #DEFAULT_MAX_LAG}). */
    public Builder maxLag(Duration maxLag) {
      this.maxLag = maxLag;
      return this;
    }

    /** The age over which {@code oldest-transaction} warns (default {@link #DEFAULT_MAX_TRANSACTION_AGE}). */
    public Builder maxTransactionAge(Duration maxTransactionAge) {
      this.maxTransactionAge = maxTransactionAge;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public OutboxDoctor build() {
      if (store == null) {
        throw new InvalidConfigurationException("store is required: .store(jdbcOutboxStore)");
      }
      requirePositive("maxLag", maxLag);
      requirePositive("maxTransactionAge", maxTransactionAge);
      return new OutboxDoctor(this);
    }

    private static void requirePositive(String option, Duration value) {
      if (value == null || value.isNegative() || value.isZero()) {
        throw new InvalidConfigurationException(option + " must be > 0, was " + value);
      }
    }
  }
}
