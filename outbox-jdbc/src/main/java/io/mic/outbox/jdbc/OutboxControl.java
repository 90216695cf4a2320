package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.InvalidEventException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.PauseState;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Cluster-wide pauses of a {@link JdbcOutboxStore}'s outbox, stored in the table {@code <table>_control}.
 * Once {@link #pause} has returned, no claim or no-claim read of that outbox that starts afterwards, in any
 * process, hands out a paused event; batches claimed before are still published, and in ordered mode a
 * paused head still blocks its aggregate. This adds to a dispatcher's in-process {@code pause()}.
 *
 * <pre>{@code
 * OutboxControl control = OutboxControl.builder().store(store).build();
 * control.pause("billing.issued", "billing consumer v2 rolls out, PAY-123");
 * control.pauses();                  // [Pause[topic=billing.issued, reason=…, pausedAt=…]]
 * control.resume("billing.issued");
 * }</pre>
 *
 * <p>{@link JdbcOutboxStore#createSchema()} creates the table; {@link #createSchema()} does it alone, for an
 * outbox created before the table existed. Times are the database's. Immutable and thread-safe.
 */
public final class OutboxControl {
  /** Longest pause reason, in characters. */
  public static final int MAX_REASON_LENGTH = 1000;

  private static final Logger LOG = LoggerFactory.getLogger(OutboxControl.class);
  private final TableAccess outbox;
  private final ControlStatements statements;

  OutboxControl(TableAccess outbox) {
    this.outbox = outbox;
    this.statements = new ControlStatements(outbox);
  }

  public static Builder builder() {
    return new Builder();
  }

  /** One pause: {@code topic} is {@code null} when every topic is paused. */
  public record Pause(String topic, String reason, Instant pausedAt) {
    /** Whether this pause holds every topic. */
    public boolean allTopics() {
      return topic == null;
    }
  }

  /** Creates the control table if it is missing; safe at every start. */
  public void createSchema() {
    boolean created = outbox.createSchema(schemaResource(outbox.dialect), JdbcOutboxStore.DEFAULT_TABLE);
    LOG.info("outbox control table {} {}", outbox.name.derivedName("control"), created ? "ready" : "found");
  }

  /** The control table's DDL for this outbox's table name, comments removed. */
  public String schemaDdl() {
    return outbox.ddl(schemaResource(outbox.dialect), JdbcOutboxStore.DEFAULT_TABLE);
  }

  /** Where the control table's DDL for {@code dialect} is: {@code control-<file of the outbox DDL>}. */
  static String schemaResource(Dialect dialect) {
    String outboxDdl = dialect.schemaResource();
    int slash = outboxDdl.lastIndexOf('/');
    return outboxDdl.substring(0, slash + 1) + "control-" + outboxDdl.substring(slash + 1);
  }

  /**
   * Pauses {@code topic}, or every topic when it is {@code null}, for every dispatcher of this outbox: every
   * claim that starts after this returns honours it.
   *
   * @param topic the exact topic of the events to pause (no wildcards), or {@code null} for every topic
   * @param reason why, for the operators who will see it in {@code mic-outbox status}
   * @return {@code false} when it was paused already (the first reason and time stay)
   * @throws IllegalArgumentException if the topic is not one an event can have, or the reason is blank or
   *     too long
   */
  public boolean pause(String topic, String reason) {
    String key = key(topic);
    requireEventTopic(topic);
    if (reason == null || reason.isBlank() || reason.length() > MAX_REASON_LENGTH) {
      throw new IllegalArgumentException("reason is required: say why the outbox is paused and who to ask,"
          + " in at most " + MAX_REASON_LENGTH + " characters" + (reason == null ? "" : ", was "
          + reason.length() + " characters"));
    }
    boolean paused = statements.insert(key, reason);
    if (paused) {
      LOG.info("outbox {}: {} paused for every dispatcher", outbox.name, describe(topic));
    }
    return paused;
  }

  /**
   * Lifts the pause of {@code topic}, or the pause of every topic when it is {@code null} (pauses of single
   * topics stay).
   *
   * @return {@code false} when there was no such pause
   */
  public boolean resume(String topic) {
    String key = key(topic);
    boolean resumed = statements.delete(key);
    if (resumed) {
      LOG.info("outbox {}: {} resumed", outbox.name, describe(topic));
    }
    return resumed;
  }

  /**
   * The pauses now, the pause of every topic first, then by topic; none when the control table does not exist
   * (nothing can be paused then).
   */
  public List<Pause> pauses() {
    try {
      return statements.list();
    } catch (OutboxStoreException e) {
      if (isMissingTable(e)) {
        return List.of();
      }
      throw e;
    }
  }

  /** What dispatchers honour now: one short query on the small control table. */
  public PauseState state() {
    return statements.state();
  }

  /** Whether {@code e} says the control table does not exist (an outbox older than the table). */
  static boolean isMissingTable(OutboxStoreException e) {
    if (!(e.getCause() instanceof SQLException s) || s.getSQLState() == null) {
      return false;
    }
    return s.getSQLState().equals("42P01") || s.getSQLState().equals("42S02") || s.getSQLState().equals("42S04");
  }

  /**
   * Whether {@code e} says this role cannot use the control table: it is missing, or the role has no rights
   * on it (PostgreSQL 42501, MariaDB/MySQL error 1142).
   */
  static boolean isUnusable(OutboxStoreException e) {
    if (isMissingTable(e)) {
      return true;
    }
    return e.getCause() instanceof SQLException s && ("42501".equals(s.getSQLState()) || s.getErrorCode() == 1142);
  }

  private static String key(String topic) {
    if (topic == null) {
      return ControlStatements.EVERY_TOPIC;
    }
    if (topic.equals(SchemaVersion.ROW)) {
      throw new IllegalArgumentException("'" + topic + "' is the control table's row of the schema version, not a"
          + " pause: it is never paused or resumed");
    }
    if (topic.isBlank() || topic.length() > OutboxEvent.MAX_NAME_LENGTH || !topic.strip().equals(topic)) {
      throw new IllegalArgumentException("topic '" + topic + "' is invalid: give the topic of the events to"
          + " pause, at most " + OutboxEvent.MAX_NAME_LENGTH + " characters, or no topic to pause every topic");
    }
    return topic;
  }

  /**
   * Refuses a topic no event can have (a pattern such as {@code billing.*}, a space): its pause would be
   * stored and listed, and hold nothing. The rule is {@link OutboxEvent}'s own. A resume takes any stored
   * topic, so that such a pause written before can still be lifted.
   */
  private static void requireEventTopic(String topic) {
    if (topic == null) {
      return;
    }
    try {
      OutboxEvent.builder().aggregate("pause", "pause").topic(topic).payload("{}").build();
    } catch (InvalidEventException e) {
      throw new IllegalArgumentException(e.getMessage() + "; a pause holds the one topic it names: give the topic"
          + " of the events to pause, or no topic to pause every topic", e);
    }
  }

  private static String describe(String topic) {
    return topic == null ? "every topic" : "topic " + topic;
  }

  /** Builds an {@link OutboxControl}; {@code store} is required. */
  public static final class Builder {
    private JdbcOutboxStore store;

    private Builder() {}

    /** Required: the store whose outbox is paused; its DataSource and dialect are used. */
    public Builder store(JdbcOutboxStore store) {
      this.store = store;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public OutboxControl build() {
      if (store == null) {
        throw new InvalidConfigurationException("store is required: .store(jdbcOutboxStore)");
      }
      return new OutboxControl(store.access());
    }
  }
}
