package io.mic.replay.internal;

import io.mic.outbox.archive.ArchivedEvent;
import java.util.Comparator;

/** The replay order: {@code created_at}, then the id by code point (= UTF-8 byte order, as ClickHouse sorts). */
public final class ReplayOrder {
  public static final Comparator<ArchivedEvent> ORDER = Comparator
      .comparing(ArchivedEvent::createdAt)
      .thenComparing(ArchivedEvent::id, ReplayOrder::compareCodePoints);

  private ReplayOrder() {}

  /** {@link String#compareTo} compares UTF-16 units, which misorders characters above U+FFFF. */
  static int compareCodePoints(String a, String b) {
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
