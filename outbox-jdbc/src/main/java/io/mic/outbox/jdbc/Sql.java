package io.mic.outbox.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.UUID;

/**
 * SQL text with the values of its parameters, in the order of its {@code ?}s. Concatenating two pieces
 * concatenates their values, so a statement composed of fragments binds what each fragment carries, where it
 * stands, and no caller counts parameter indexes. Immutable.
 *
 * <pre>{@code
 * Sql read = Sql.of("SELECT id FROM outbox o WHERE o.topic = ?", topic).plus(" LIMIT ?", limit);
 * try (PreparedStatement ps = read.prepare(connection, dialect)) { ... }
 * }</pre>
 *
 * <p>Ids and instants are bound as the dialect stores them ({@link Dialect#setId}, {@link Dialect#setInstant});
 * strings, numbers and bytes as themselves; {@code null} as a NULL whose type the database infers, and
 * {@link #orNull} as a NULL of the value's type.
 */
final class Sql {
  /** The columns every read of events returns, in this order (see {@link EventRows}). */
  static final String COLUMNS = "id, aggregate_type, aggregate_id, topic, payload, headers, priority, status, attempts,"
      + " next_attempt_at, lease_owner, lease_until, created_at, dispatched_at, last_error,"
      + " sequence, schema_version, occurred_at, trace_parent";

  /** The columns an append writes, in this order. */
  static final String INSERT_COLUMNS = "id, aggregate_type, aggregate_id, topic, payload, headers, priority,"
      + " created_at, next_attempt_at, sequence, schema_version, occurred_at, trace_parent";

  /** No text, no values: the fragment of a condition that does not apply. */
  static final Sql EMPTY = new Sql("", List.of());

  private final String text;
  private final List<Object> values;

  private Sql(String text, List<Object> values) {
    this.text = text;
    this.values = values;
  }

  /**
   * {@code text} with one value per {@code ?}, in order.
   *
   * @throws IllegalArgumentException when the number of values is not the number of {@code ?}s
   */
  static Sql of(String text, Object... values) {
    long marks = text.chars().filter(ch -> ch == '?').count();
    if (marks != values.length) {
      throw new IllegalArgumentException(values.length + " value(s) for " + marks + " parameter(s) in: " + text);
    }
    return new Sql(text, values.length == 0 ? List.of() : Collections.unmodifiableList(Arrays.asList(values)));
  }

  static Sql in(String column, Collection<?> values) {
    return of(column + " IN " + placeholders(values.size()), values.toArray());
  }

  static Sql notIn(String column, Collection<?> values) {
    return of(column + " NOT IN " + placeholders(values.size()), values.toArray());
  }

  /** The database clock {@code micros} microseconds ahead: {@link Dialect#plusMicros} with its value. */
  static Sql later(Dialect dialect, long micros) {
    return of(dialect.plusMicros(dialect.now()), micros);
  }

  static Sql ago(Dialect dialect, long micros) {
    return later(dialect, -micros);
  }

  Sql plus(Sql more) {
    if (more.text.isEmpty()) {
      return this;
    }
    List<Object> all = values;
    if (!more.values.isEmpty()) {
      all = new ArrayList<>(values.size() + more.values.size());
      all.addAll(values);
      all.addAll(more.values);
    }
    return new Sql(text + more.text, all);
  }

  Sql plus(String text, Object... values) {
    return plus(of(text, values));
  }

  Sql when(boolean condition) {
    return condition ? this : EMPTY;
  }

  String text() {
    return text;
  }

  List<Object> values() {
    return values;
  }

  PreparedStatement prepare(Connection c, Dialect dialect) throws SQLException {
    PreparedStatement ps = c.prepareStatement(text);
    try {
      bind(ps, dialect);
      return ps;
    } catch (SQLException | RuntimeException e) {
      ps.close();
      throw e;
    }
  }

  /**
   * {@code value}, or a NULL bound with {@code type}'s SQL type ({@link Instant} or {@link String}). A statement
   * that PostgreSQL has prepared keeps its parameters' types: an untyped NULL in a hot statement that otherwise
   * binds a value would have the driver prepare it again each time the two alternate.
   */
  static Object orNull(Object value, Class<?> type) {
    if (type != Instant.class && type != String.class) {
      throw new IllegalArgumentException("no typed NULL for " + type);
    }
    return value != null ? value : new TypedNull(type);
  }

  private record TypedNull(Class<?> type) {}

  void bind(PreparedStatement ps, Dialect dialect) throws SQLException {
    int i = 1;
    for (Object v : values) {
      if (v instanceof TypedNull n) {
        if (n.type() == Instant.class) {
          dialect.setInstant(ps, i, null);
        } else {
          ps.setString(i, null);
        }
      } else if (v instanceof UUID id) {
        dialect.setId(ps, i, id);
      } else if (v instanceof Instant t) {
        dialect.setInstant(ps, i, t);
      } else if (v instanceof String s) {
        ps.setString(i, s);
      } else if (v instanceof Integer n) {
        ps.setInt(i, n);
      } else if (v instanceof Long n) {
        ps.setLong(i, n);
      } else if (v instanceof byte[] b) {
        ps.setBytes(i, b);
      } else if (v instanceof java.sql.Array a) {
        ps.setArray(i, a);
      } else {
        ps.setObject(i, v);
      }
      i++;
    }
  }

  @Override
  public String toString() {
    return text;
  }

  /** {@link #COLUMNS}, each with {@code prefix}, e.g. {@code o.}. */
  static String aliased(String prefix) {
    return prefix + COLUMNS.replace(", ", ", " + prefix);
  }

  static String placeholders(int n) {
    return "(" + repeat(n, "?") + ")";
  }

  static String repeat(int n, String item) {
    return String.join(", ", Collections.nCopies(n, item));
  }

  /**
   * Whether a row is still held by the caller: {@code PROCESSING} under {@code owner}'s lease when there is an
   * owner, else still {@code PENDING}.
   */
  static Sql fence(String owner) {
    return owner != null ? of("status = 'PROCESSING' AND lease_owner = ?", owner) : of("status = 'PENDING'");
  }
}
