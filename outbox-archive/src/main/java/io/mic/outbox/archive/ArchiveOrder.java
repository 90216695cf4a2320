package io.mic.outbox.archive;

import io.mic.outbox.OutboxEvent;
import java.time.Instant;
import java.util.Comparator;
import java.util.function.Function;

/**
 * The replay order, written once: {@code created_at}, then the id compared by Unicode code point. That is
 * the order ClickHouse returns ({@link #CLICKHOUSE_ORDER_BY}: it compares {@code String}s as bytes, and
 * the byte order of UTF-8 is the code-point order), so a JSON archive, its sorted replay and a ClickHouse
 * replay agree. {@link String#compareTo} would not: it compares UTF-16 units, which puts a character above
 * U+FFFF (a surrogate pair, {@code 0xD800…}) before one in {@code U+E000…U+FFFF}.
 *
 * <pre>{@code
 * events.sort(ArchiveOrder.EVENTS);
 * }</pre>
 */
public final class ArchiveOrder {
  public static final Comparator<ArchivedEvent> EVENTS = by(ArchivedEvent::createdAt, ArchivedEvent::id);
  /** Outbox events in the order their archive records replay (the id as its text). */
  public static final Comparator<OutboxEvent> OUTBOX_EVENTS = by(OutboxEvent::createdAt, e -> e.id().toString());
  /** The same order in the replay's ClickHouse query, whose id column is the text {@code original_id}. */
  public static final String CLICKHOUSE_ORDER_BY = "created_at, original_id";

  private ArchiveOrder() {}

  private static <T> Comparator<T> by(Function<T, Instant> createdAt, Function<T, String> id) {
    return Comparator.comparing(createdAt).thenComparing(id, ArchiveOrder::compareIds);
  }

  public static int compareIds(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }
}
