package io.mic.outbox.jdbc.internal;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The text of an exception with the reasons behind it. A pool's "Connection is not available" says
 * nothing about why; the driver's exception in its cause chain does ("database … does not exist",
 * "Connection refused"). Credentials a driver may echo from a URL are masked.
 */
public final class Causes {
  private static final int MAX_CAUSES = 4;
  /** {@code password=…}, {@code pwd=…} in a URL's query or properties, up to the next separator. */
  private static final Pattern KEY_VALUE = Pattern.compile("(?i)\\b(password|passwd|pwd)=[^&;,\\s)]*");
  /**
   * {@code scheme://user:secret@host}: the secret, up to the last {@code @} before a space (a secret may
   * hold {@code /} or {@code @}; masking too much is the safe side).
   */
  private static final Pattern USER_INFO = Pattern.compile("(://[^:/@\\s]*):\\S*@");

  private Causes() {}

  /**
   * {@code t}'s message followed by those of its causes that add something, e.g.
   * {@code "pool-1 - Connection is not available …; caused by: FATAL: database \"x\" does not exist"}.
   */
  public static String describe(Throwable t) {
    List<String> parts = new ArrayList<>();
    Map<Throwable, Boolean> seen = new IdentityHashMap<>();
    for (Throwable c = t; c != null && seen.put(c, true) == null && parts.size() <= MAX_CAUSES; c = c.getCause()) {
      String m = c.getMessage() == null ? c.getClass().getSimpleName() : c.getMessage().strip();
      if (parts.stream().noneMatch(p -> p.contains(m))) {
        parts.add(m);
      }
    }
    String head = parts.get(0);
    return redact(parts.size() == 1 ? head : head + "; caused by: " + String.join("; ", parts.subList(1, parts.size())));
  }

  /**
   * {@code e} without the lines after its first: the database's own error, SQLState and error code kept,
   * the details dropped. They may quote the statement's values; PostgreSQL's "Failing row contains (…)"
   * quotes the whole row, payload and headers included, which no message or log may carry. The copy has
   * {@code e}'s stack trace; use it in place of {@code e} as a cause.
   */
  public static SQLException withoutValues(SQLException e) {
    String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().strip();
    int end = message.indexOf('\n');
    SQLException copy = new SQLException(end < 0 ? message : message.substring(0, end).strip(), e.getSQLState(),
        e.getErrorCode());
    copy.setStackTrace(e.getStackTrace());
    return copy;
  }

  /** {@code text} with passwords in URLs and {@code key=value} properties replaced by {@code ***}. */
  public static String redact(String text) {
    String masked = KEY_VALUE.matcher(text).replaceAll("$1=***");
    return USER_INFO.matcher(masked).replaceAll("$1:***@");
  }
}
