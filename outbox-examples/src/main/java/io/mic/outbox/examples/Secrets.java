package io.mic.outbox.examples;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Keeps the passwords a user gives the demo out of what it prints: the user-info and password parameters of a
 * JDBC or NATS URL, and the same secrets wherever a driver's message repeats them.
 */
final class Secrets {
  /** {@code password=…}, {@code ;PASSWORD=…} (H2), {@code sslpassword=…}, {@code token=…} and the like. */
  private static final Pattern SECRET_PARAMETER =
      Pattern.compile("(?i)([?&;][^=&;?]*(?:password|passwd|pwd|secret|token)[^=&;?]*=)([^&;]*)");

  private final List<String> secrets = new ArrayList<>();

  /** The secrets in {@code url} (user-info password, password parameters) and any {@code more}. */
  Secrets(String url, String... more) {
    if (url != null) {
      int start = url.indexOf("//");
      int at = userInfoEnd(url, start);
      if (at > 0) {
        String userInfo = url.substring(start + 2, at);
        int colon = userInfo.indexOf(':');
        secrets.add(colon < 0 ? userInfo : userInfo.substring(colon + 1));
      }
      Matcher m = SECRET_PARAMETER.matcher(url);
      while (m.find()) {
        secrets.add(m.group(2));
      }
    }
    for (String s : more) {
      secrets.add(s);
    }
    secrets.removeIf(s -> s == null || s.isEmpty());
  }

  /** {@code jdbc:mariadb://app:pw@db/x?password=pw} becomes {@code jdbc:mariadb://***@db/x?password=***}. */
  static String redact(String url) {
    int start = url.indexOf("//");
    int at = userInfoEnd(url, start);
    String redacted = at > 0 ? url.substring(0, start + 2) + "***" + url.substring(at) : url;
    return SECRET_PARAMETER.matcher(redacted).replaceAll("$1***");
  }

  /** {@code text} with every secret replaced by {@code ***}, e.g. a driver's message that quotes the URL. */
  String mask(String text) {
    String masked = text == null ? "" : text;
    for (String s : secrets) {
      masked = masked.replace(s, "***");
    }
    return masked;
  }

  /** The '@' ending the user-info: the last one before the query, so a password may hold '/' or '@'. */
  private static int userInfoEnd(String url, int start) {
    if (start < 0) {
      return -1;
    }
    int query = url.length();
    for (char c : new char[] {'?', ';'}) {
      int i = url.indexOf(c, start + 2);
      if (i >= 0 && i < query) {
        query = i;
      }
    }
    return url.lastIndexOf('@', query - 1) > start ? url.lastIndexOf('@', query - 1) : -1;
  }
}
