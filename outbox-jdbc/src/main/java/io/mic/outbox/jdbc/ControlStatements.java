package io.mic.outbox.jdbc;

import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PauseState;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The statements on an outbox's control table {@code <table>_control(topic, reason, paused_at)}: a pause
 * of every topic is the row with the empty topic. The same on every database.
 */
final class ControlStatements {
  private static final Logger LOG = LoggerFactory.getLogger(ControlStatements.class);
  /** The stored topic of a pause of every topic. */
  static final String EVERY_TOPIC = "";

  /** How long a store reads past a control table it found missing or unreadable before it looks again. */
  static final int RECHECK_SECONDS = 30;

  private final TableAccess outbox;
  private final String table;
  private final SchemaVersion version;
  /** While the control table is missing: when to look for it again ({@link System#nanoTime()}). */
  private volatile long missingUntil;
  private volatile boolean missingReported;

  ControlStatements(TableAccess outbox) {
    this.outbox = outbox;
    this.table = outbox.name.sibling("control", outbox.dialect.identifierQuote());
    this.version = new SchemaVersion(outbox);
  }

  /** The pauses now, on connection {@code c} (inside a claim's transaction, or alone). */
  static PauseState state(Connection c, String controlTable, Dialect dialect) throws SQLException {
    Set<String> topics = new HashSet<>();
    try (PreparedStatement ps = c.prepareStatement("SELECT topic FROM " + controlTable);
        ResultSet rs = ps.executeQuery()) {
      while (rs.next()) {
        String topic = rs.getString(1);
        if (EVERY_TOPIC.equals(topic)) {
          return PauseState.ALL;
        }
        if (!SchemaVersion.ROW.equals(topic)) {
          topics.add(topic);
        }
      }
    }
    return PauseState.topics(topics);
  }

  /**
   * {@code request} with the topics paused in the control table now added to its own, read on {@code c} as
   * the first statement of a claim or fetch; {@code null} when every topic is paused. A request that does not
   * honour the control table is returned as it is. The pauses are bound as values rather than read by a
   * subquery of the claim: a subquery would change the planner's estimate of the claimable rows and, with
   * hot aggregates, turn the claim's index scan into a sequential scan (seen on PostgreSQL 15).
   */
  static ReadRequest merge(Connection c, ReadRequest request, String controlTable, Dialect dialect)
      throws SQLException {
    if (!request.honourControl()) {
      return request;
    }
    PauseState paused = state(c, controlTable, dialect);
    if (paused.all()) {
      return null;
    }
    Set<String> topics = new java.util.LinkedHashSet<>(request.pausedTopics());
    topics.addAll(paused.topics());
    return request.withoutControl(List.copyOf(topics));
  }

  PauseState state() {
    return outbox.inAutoCommit(c -> state(c, table, outbox.dialect));
  }

  /** The pauses now, for a store: none while the table is missing or unreadable (said once at WARN). */
  PauseState pauseState() {
    if (unusableNow()) {
      return PauseState.NONE;
    }
    try {
      PauseState state = state();
      missingUntil = 0;
      return state;
    } catch (OutboxStoreException e) {
      unusable(e);
      return PauseState.NONE;
    }
  }

  /**
   * Runs a read that honours the control table's pauses, unless the table is known to be unusable; when the
   * read finds it missing or unreadable, the read runs again without it (see {@link #pauseState()}). Refuses
   * tables of a newer schema version first ({@link SchemaVersion#requireKnown()}), unless the control table,
   * which holds the version, is known to be unusable.
   */
  <T> T honouring(ReadRequest request, Function<ReadRequest, T> read) {
    if (unusableNow()) {
      return read.apply(request.withoutControl());
    }
    version.requireKnown();
    try {
      return read.apply(request);
    } catch (OutboxStoreException e) {
      unusable(e);
      return read.apply(request.withoutControl());
    }
  }

  private boolean unusableNow() {
    return missingUntil != 0 && System.nanoTime() - missingUntil < 0;
  }

  /** Rethrows {@code e} unless it says the control table is unusable; else notes it, and warns once. */
  private void unusable(OutboxStoreException e) {
    if (!OutboxControl.isUnusable(e)) {
      throw e;
    }
    missingUntil = System.nanoTime() + Duration.ofSeconds(RECHECK_SECONDS).toNanos();
    if (!missingReported) {
      missingReported = true;
      LOG.warn("outbox table {}: the control table {} is missing or not readable by this role, so cluster-wide"
          + " pauses cannot be honoured; run createSchema() as the schema's owner and grant SELECT on it: {}",
          outbox.name, outbox.name.derivedName("control"), e.getMessage());
    }
  }

  /** Records a pause; {@code false} when the topic was paused already. */
  boolean insert(String key, String reason) {
    return outbox.inTransaction(c -> {
      try (PreparedStatement ps = Sql.of("SELECT topic FROM " + table + " WHERE topic = ?", key)
          .prepare(c, outbox.dialect); ResultSet rs = ps.executeQuery()) {
        if (rs.next()) {
          return false;
        }
      }
      try (PreparedStatement ps = Sql.of("INSERT INTO " + table + " (topic, reason, paused_at)"
          + " VALUES (?, ?, " + outbox.dialect.now() + ")", key, reason).prepare(c, outbox.dialect)) {
        ps.executeUpdate();
        return true;
      } catch (SQLException e) {
        if (outbox.dialect.isDuplicateKey(e)) {
          return false; // paused at the same moment by someone else
        }
        throw e;
      }
    });
  }

  /** Deletes a pause; {@code false} when there was none. */
  boolean delete(String key) {
    return outbox.update(Sql.of("DELETE FROM " + table + " WHERE topic = ?", key)) > 0;
  }

  /** Every pause, the pause of every topic first, then by topic. */
  List<OutboxControl.Pause> list() {
    return outbox.inAutoCommit(c -> {
      List<OutboxControl.Pause> pauses = new ArrayList<>();
      try (PreparedStatement ps = c.prepareStatement("SELECT topic, reason, paused_at FROM " + table
          + " ORDER BY topic"); ResultSet rs = ps.executeQuery()) {
        while (rs.next()) {
          String topic = rs.getString(1);
          if (SchemaVersion.ROW.equals(topic)) {
            continue;
          }
          pauses.add(new OutboxControl.Pause(EVERY_TOPIC.equals(topic) ? null : topic, rs.getString(2),
              outbox.dialect.getInstant(rs, 3)));
        }
      }
      return pauses;
    });
  }
}
