package io.mic.outbox.nats.internal;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * NATS server URLs as they may appear in messages and logs: without the user, password or token they may
 * carry. A URL may list several servers separated by commas; each one's user-info is masked.
 */
public final class Urls {
  private static final Pattern SCHEME = Pattern.compile("\\s*[A-Za-z][A-Za-z0-9+.-]*://");
  /** A server without credentials: host or [IPv6], optional numeric port. */
  private static final Pattern HOST_PORT = Pattern.compile(
      "\\s*([A-Za-z0-9._-]+|\\[[0-9A-Fa-f:.%]+])(:[0-9]+)?\\s*");

  private Urls() {}

  /**
   * {@code nats://user:secret@host:4222} becomes {@code nats://***@host:4222}, and
   * {@code nats://u:p1@h1:4222,nats://u:p2@h2:4222} becomes {@code nats://***@h1:4222,nats://***@h2:4222}.
   * The user-info reaches up to the last {@code @} before the host, so a password holding {@code @},
   * {@code /} or {@code ://} is masked whole; when a part between commas cannot be told apart from a
   * password it is masked too.
   */
  public static String redact(String urls) {
    if (urls == null) {
      return null;
    }
    StringBuilder out = new StringBuilder(urls.length());
    int cursor = 0;
    while (true) {
      int at = urls.indexOf('@', cursor);
      if (at < 0) {
        return out.append(urls, cursor, urls.length()).toString();
      }
      int next;
      while ((next = urls.indexOf('@', at + 1)) >= 0 && !startsAnotherServer(urls, at + 1, next)) {
        at = next; // an '@' inside the password: the user-info ends at the last one before the host
      }
      out.append(urls, cursor, userInfoStart(urls, cursor, at)).append("***@");
      cursor = at + 1;
    }
  }

  private static boolean startsAnotherServer(String s, int from, int to) {
    String between = s.substring(from, to);
    return between.indexOf(',') >= 0 || between.contains("://");
  }

  /**
   * Where the user-info ending at {@code at} begins: after the scheme of its server, skipping the servers
   * without credentials (and the host of the previous server) that precede it in {@code [from, at)}.
   */
  private static int userInfoStart(String s, int from, int at) {
    int p = from;
    while (true) {
      Matcher scheme = SCHEME.matcher(s).region(p, at);
      int q = scheme.lookingAt() ? scheme.end() : p;
      int comma = s.indexOf(',', q);
      if (comma < 0 || comma >= at || !HOST_PORT.matcher(s).region(q, comma).matches()) {
        return q;
      }
      p = comma + 1; // a server without credentials: keep it visible
    }
  }
}
