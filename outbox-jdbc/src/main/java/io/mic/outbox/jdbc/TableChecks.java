package io.mic.outbox.jdbc;

import io.mic.outbox.HeldAggregate;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.OutboxDoctor.Check;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.stream.Collectors;

/** The checks of {@link OutboxDoctor} that read the same on every database, and MariaDB's open transactions. */
final class TableChecks {
  private static final String OWNER = "run createSchema() once as the schema's owner";

  private final JdbcOutboxStore store;
  private final TableAccess access;

  TableChecks(JdbcOutboxStore store, TableAccess access) {
    this.store = store;
    this.access = access;
  }

  Check schemaVersion() {
    String name = "schema-version";
    int library = JdbcOutboxStore.SCHEMA_VERSION;
    OptionalInt recorded;
    try {
      recorded = new SchemaVersion(access).recorded();
    } catch (OutboxStoreException e) {
      return Check.warn(name, "no schema version readable in " + access.name.derivedName("control") + "."
          + SchemaVersion.COLUMN + " (" + e.getMessage() + ")", OWNER + ": it upgrades the tables and records"
          + " version " + library + "; grant SELECT on the control table to this role");
    }
    if (recorded.isEmpty()) {
      return Check.warn(name, "no schema version recorded (tables created before it was recorded, or by a role"
          + " that cannot write " + access.name.derivedName("control") + ")", OWNER + ": it records version "
          + library);
    }
    int version = recorded.getAsInt();
    if (version > library) {
      return Check.fail(name, "version " + version + ", newer than version " + library + " of this MIC Outbox: its"
          + " stores dispatch nothing from these tables", "run the application and mic-outbox with the MIC Outbox"
          + " that upgraded the tables (or a later one)");
    }
    if (version < library) {
      return Check.warn(name, "version " + version + ", older than version " + library + " of this MIC Outbox",
          OWNER + " to upgrade the tables (docs/operations.md)");
    }
    return Check.pass(name, "version " + version + ", as this MIC Outbox");
  }

  /** The tables and indexes {@code createSchema()} creates, and on PostgreSQL the indexes the lean schema replaced. */
  Check indexes() {
    String name = "indexes";
    String resource = access.dialect.schemaResource();
    List<String> missing = access.missingFrom(resource, JdbcOutboxStore.DEFAULT_TABLE);
    if (missing == null) {
      return Check.fail(name, "the catalog cannot be read", "grant the role the right to read the catalog");
    }
    if (!missing.isEmpty()) {
      String ddl = access.ddl(resource, JdbcOutboxStore.DEFAULT_TABLE);
      String statements = missing.stream().filter(m -> m.startsWith("index ")).map(m -> createIndex(ddl,
          m.substring("index ".length()))).filter(java.util.Objects::nonNull).collect(Collectors.joining("; "));
      return Check.fail(name, "missing: " + String.join(", ", missing), OWNER
          + (statements.isEmpty() ? "" : ", or run: " + statements));
    }
    Catalog catalog = Catalog.of(access.dialect);
    List<String> obsolete = catalog.obsoleteIndexes().stream().map(access.name::derivedName).toList();
    List<String> present = indexNames(catalog).stream().filter(obsolete::contains).toList();
    if (!present.isEmpty()) {
      return Check.warn(name, "indexes of a table older than the lean schema: " + String.join(", ", present),
          OWNER + ", or apply store.upgradeIndexesDdl() (docs/operations.md, \"Upgrading to the lean indexes\")");
    }
    if (catalog.upgradeParkingResource() != null && !claimIndexWithParked(catalog).isEmpty()) {
      return Check.warn(name, "index " + access.name.derivedName("claim_idx") + " holds parked events too (a table"
          + " older than schema version 2): claims step over the waiting events of held aggregates", OWNER
          + ", or apply store.upgradeIndexesDdl() (docs/operations.md, \"Upgrading the claim index\")");
    }
    return Check.pass(name, "every table and index of " + resource.substring(resource.lastIndexOf('/') + 1)
        + " exists");
  }

  private List<String> claimIndexWithParked(Catalog catalog) {
    return access.inAutoCommit(c -> {
      List<String> names = new ArrayList<>();
      try (PreparedStatement ps = catalog.claimIndexesWithParked(access.name.schema(), access.name.table(),
          access.name.derivedName("claim_idx")).prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(1));
        }
      }
      return names;
    });
  }

  /**
   * The statement that creates index {@code index} of {@code ddl}: its {@code CREATE INDEX}, or for an index
   * declared inside {@code CREATE TABLE} (MariaDB), {@code ALTER TABLE … ADD INDEX}; {@code null} if none.
   */
  private String createIndex(String ddl, String index) {
    for (String statement : ddl.split(";")) {
      String s = statement.strip().replaceAll("\\s+", " ");
      if (s.startsWith("CREATE INDEX") && s.contains(index)) {
        return s;
      }
      java.util.regex.Matcher inline = java.util.regex.Pattern.compile("INDEX \\W?" + index + "\\W? \\([^)]*\\)")
          .matcher(s);
      if (s.startsWith("CREATE TABLE") && inline.find()) {
        return "ALTER TABLE " + access.table + " ADD " + inline.group();
      }
    }
    return null;
  }

  private List<String> indexNames(Catalog catalog) {
    return access.inAutoCommit(c -> {
      List<String> names = new ArrayList<>();
      try (PreparedStatement ps = catalog.indexes(access.name.schema(), List.of(access.name.table()))
          .prepare(c, access.dialect); ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          names.add(rs.getString(2));
        }
      }
      return names;
    });
  }

  /** MariaDB: the oldest InnoDB transaction (of the whole server: undo is shared); H2 cannot tell. */
  Check oldestTransaction(Duration max) {
    String name = "oldest-transaction";
    if (!(access.dialect instanceof MariaDbDialect)) {
      return Check.notApplicable(name, access.dialect.name() + " does not show its open transactions");
    }
    return access.inAutoCommit(c -> {
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT trx_mysql_thread_id,"
          + " TIMESTAMPDIFF(MICROSECOND, trx_started, CONVERT_TZ(NOW(6), @@session.time_zone, 'SYSTEM'))"
          + " FROM information_schema.innodb_trx WHERE trx_mysql_thread_id <> CONNECTION_ID()"
          + " ORDER BY trx_started LIMIT 1")) {
        if (!rs.next()) {
          return Check.pass(name, "no transaction open");
        }
        long thread = rs.getLong(1);
        Duration age = Duration.of(Math.max(0, rs.getLong(2)), ChronoUnit.MICROS);
        String figure = "a transaction open for " + age(age) + " (connection " + thread + ")";
        return age.compareTo(max) > 0 ? Check.warn(name, figure + ", over " + age(max) + ": InnoDB keeps every"
            + " row version since it began", "end it (KILL " + thread + " if it is forgotten); set wait_timeout"
            + " and commit long jobs in steps") : Check.pass(name, figure);
      } catch (SQLException e) {
        if (Catalog.MARIADB.cannotSeeTransactions(e)) {
          return Check.warn(name, "this role cannot see the open transactions", "grant it PROCESS");
        }
        throw e;
      }
    });
  }

  Check lag(Duration max) {
    String name = "lag";
    Optional<Duration> lag = store.oldestPendingAge();
    if (lag.isEmpty()) {
      return Check.pass(name, "no live event");
    }
    Optional<OutboxEvent> oldest = new EventQueries(access).oldestLive();
    String figure = "the oldest live event is " + age(lag.get()) + " old" + oldest.map(e -> " (" + e.id() + ", topic "
        + e.topic() + ", " + e.status() + ", attempts " + e.attempts() + ")").orElse("");
    if (lag.get().compareTo(max) <= 0) {
      return Check.pass(name, figure);
    }
    return Check.warn(name, figure + ", over " + age(max), "see whether dispatchers run (mic-outbox status), the"
        + " broker answers, the topic is paused, or an ordered head waits (docs/operations.md, runbook)");
  }

  Check deadLetters() {
    String name = "dead-letters";
    return access.inAutoCommit(c -> {
      try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT COUNT(*), "
          + access.dialect.microsSince("MIN(created_at)") + " FROM " + access.table + " WHERE status = 'DLQ'")) {
        rs.next();
        long count = rs.getLong(1);
        if (count == 0) {
          return Check.pass(name, "no dead letter");
        }
        return Check.warn(name, count + " dead letter(s), the oldest created " + age(Duration.of(Math.max(0,
            rs.getLong(2)), ChronoUnit.MICROS)) + " ago", "mic-outbox dlq list; fix the cause, then dlq redrive or"
            + " dlq purge");
      }
    });
  }

  /** Aggregates with live events behind a dead letter: held by dispatchers that hold, whichever do. */
  Check heldAggregates() {
    String name = "held-aggregates";
    List<HeldAggregate> held = new DeadLetterStatements(access).held();
    if (held.isEmpty()) {
      return Check.pass(name, "no aggregate waits behind a dead letter");
    }
    HeldAggregate oldest = held.get(0);
    return Check.warn(name, held.size() + " aggregate(s) with live events behind a dead letter, which dispatchers"
        + " with holdAggregateOnDeadLetter(true) keep waiting; the oldest: " + oldest.aggregateType() + "/"
        + oldest.aggregateId() + ", " + oldest.waiting() + " waiting behind " + oldest.deadEventId(),
        "mic-outbox dlq held; fix the cause, then dlq redrive (the dead event goes first) or dlq purge (the waiting"
            + " ones go on)");
  }

  Check pauses() {
    String name = "pauses";
    List<OutboxControl.Pause> pauses = new OutboxControl(access).pauses();
    if (pauses.isEmpty()) {
      return Check.pass(name, "nothing paused");
    }
    String figure = pauses.stream().map(p -> (p.allTopics() ? "every topic" : "topic " + p.topic()) + " paused since "
        + p.pausedAt() + ": " + p.reason()).collect(Collectors.joining("; "));
    return Check.warn(name, figure, "mic-outbox resume" + (pauses.size() == 1 && !pauses.get(0).allTopics()
        ? " --topic " + pauses.get(0).topic() : " [--topic T]") + " once the reason is resolved");
  }

  /** A duration the way operators read it: {@code 2h 5m}, {@code 3m 2s}, {@code 1.25s}. */
  static String age(Duration d) {
    long s = d.toSeconds();
    if (s >= 3600) {
      return s / 3600 + "h " + s % 3600 / 60 + "m";
    }
    if (s >= 60) {
      return s / 60 + "m " + s % 60 + "s";
    }
    return String.format(java.util.Locale.ROOT, "%.2fs", d.toMillis() / 1000.0);
  }
}
