package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * Which dead letters ({@code DLQ} events) an {@link OutboxDeadLetters} operation reads or changes. Every
 * filter is optional and they combine with AND; without any, the query matches every dead letter.
 * Operations go oldest first, by {@code (created_at, id)}.
 *
 * <pre>{@code
 * DeadLetterQuery q = DeadLetterQuery.builder()
 *     .topic("order.created")
 *     .aggregate("order", "42")
 *     .createdFrom(Instant.parse("2026-09-29T08:00:00Z"))     // inclusive
 *     .createdBefore(Instant.parse("2026-09-29T09:00:00Z"))   // exclusive
 *     .errorContains("401 Unauthorized")                     // literal text, case-insensitive
 *     .limit(50)
 *     .build();
 * }</pre>
 */
public final class DeadLetterQuery {
  /** How many events {@link OutboxDeadLetters#listDeadLetters} returns when the query sets no limit. */
  public static final int DEFAULT_LIST_LIMIT = 100;

  private static final DeadLetterQuery ALL = builder().build();

  /** The filters as built: {@code null} where unset, {@code limit} 0 when unset. */
  private record Filters(String topic, String aggregateType, String aggregateId, Instant createdFrom,
      Instant createdBefore, String errorContains, int limit) {}

  private final Filters f;

  private DeadLetterQuery(Filters f) {
    this.f = f;
  }

  /** Every dead letter. */
  public static DeadLetterQuery all() {
    return ALL;
  }

  public static Builder builder() {
    return new Builder();
  }

  public Optional<String> topic() {
    return Optional.ofNullable(f.topic());
  }

  public Optional<String> aggregateType() {
    return Optional.ofNullable(f.aggregateType());
  }

  public Optional<String> aggregateId() {
    return Optional.ofNullable(f.aggregateId());
  }

  /** Inclusive lower bound of {@code created_at}. */
  public Optional<Instant> createdFrom() {
    return Optional.ofNullable(f.createdFrom());
  }

  /** Exclusive upper bound of {@code created_at}. */
  public Optional<Instant> createdBefore() {
    return Optional.ofNullable(f.createdBefore());
  }

  /** Text the stored error must contain, compared case-insensitively, wildcards taken literally. */
  public Optional<String> errorContains() {
    return Optional.ofNullable(f.errorContains());
  }

  /** The most events the operation reads or changes, oldest first; empty when unset. */
  public OptionalInt limit() {
    return f.limit() == 0 ? OptionalInt.empty() : OptionalInt.of(f.limit());
  }

  /** The filters for logs, e.g. {@code topic=order.created, limit=50}; {@code all} when none. */
  @Override
  public String toString() {
    List<String> parts = new ArrayList<>();
    add(parts, "topic", f.topic());
    add(parts, "aggregateType", f.aggregateType());
    add(parts, "aggregateId", f.aggregateId());
    add(parts, "createdFrom", f.createdFrom());
    add(parts, "createdBefore", f.createdBefore());
    add(parts, "errorContains", f.errorContains() == null ? null : "'" + f.errorContains() + "'");
    add(parts, "limit", f.limit() == 0 ? null : f.limit());
    return parts.isEmpty() ? "all" : String.join(", ", parts);
  }

  private static void add(List<String> parts, String name, Object value) {
    if (value != null) {
      parts.add(name + "=" + value);
    }
  }

  /** Builds a {@link DeadLetterQuery}; every option is optional. */
  public static final class Builder {
    private String topic;
    private String aggregateType;
    private String aggregateId;
    private Instant createdFrom;
    private Instant createdBefore;
    private String errorContains;
    private int limit;

    private Builder() {}

    /** Only events of this topic (exact match). */
    public Builder topic(String topic) {
      this.topic = nonBlank("topic", topic);
      return this;
    }

    /** Only events of this aggregate type (exact match). */
    public Builder aggregateType(String aggregateType) {
      this.aggregateType = nonBlank("aggregateType", aggregateType);
      return this;
    }

    /** Only events of this aggregate id (exact match); usually with {@link #aggregateType}. */
    public Builder aggregateId(String aggregateId) {
      this.aggregateId = nonBlank("aggregateId", aggregateId);
      return this;
    }

    /** Only the events of one aggregate. */
    public Builder aggregate(String aggregateType, String aggregateId) {
      return aggregateType(aggregateType).aggregateId(aggregateId);
    }

    /** Only events created at or after {@code from}. */
    public Builder createdFrom(Instant from) {
      this.createdFrom = from;
      return this;
    }

    /** Only events created before {@code before}. */
    public Builder createdBefore(Instant before) {
      this.createdBefore = before;
      return this;
    }

    /**
     * Only events whose last error contains {@code text}, case-insensitively; {@code %}, {@code _} and
     * every other character match themselves.
     */
    public Builder errorContains(String text) {
      if (text == null || text.isEmpty()) {
        throw new InvalidConfigurationException("errorContains must not be empty; leave it unset to match any error");
      }
      this.errorContains = text;
      return this;
    }

    /** At most this many events, oldest first (at least 1). */
    public Builder limit(int limit) {
      if (limit < 1) {
        throw new InvalidConfigurationException("limit must be >= 1, was " + limit);
      }
      this.limit = limit;
      return this;
    }

    /** @throws InvalidConfigurationException if the time bounds are reversed */
    public DeadLetterQuery build() {
      if (createdFrom != null && createdBefore != null && !createdFrom.isBefore(createdBefore)) {
        throw new InvalidConfigurationException("createdFrom must be before createdBefore, was "
            + createdFrom + " and " + createdBefore);
      }
      return new DeadLetterQuery(new Filters(topic, aggregateType, aggregateId, createdFrom, createdBefore,
          errorContains, limit));
    }

    private static String nonBlank(String option, String value) {
      if (value == null || value.isBlank()) {
        throw new InvalidConfigurationException(option + " must not be blank, was "
            + (value == null ? "null" : "'" + value + "'") + "; leave it unset to match any");
      }
      return value;
    }
  }
}
