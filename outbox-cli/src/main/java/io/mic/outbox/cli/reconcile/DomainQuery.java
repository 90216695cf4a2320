package io.mic.outbox.cli.reconcile;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;
import javax.sql.DataSource;

/**
 * The operator's domain query of a reconciliation: one statement starting with {@code SELECT} or {@code WITH},
 * run in a read-only transaction that is always rolled back. A check must not change what it checks: on an
 * autocommit connection a {@code DELETE … RETURNING} was committed, and {@code select 'a'; drop table t}
 * dropped the table before its second result failed the run.
 */
final class DomainQuery {
  private final String sql;

  /** @throws IllegalArgumentException {@code sql} is not one query; the message says what to remove */
  DomainQuery(String sql) {
    this.sql = oneQuery(sql);
  }

  /** The first column of every row, as text. */
  Set<String> ids(DataSource dataSource) throws SQLException {
    Set<String> ids = new HashSet<>();
    try (Connection c = dataSource.getConnection()) {
      c.setAutoCommit(false);
      try (Statement s = c.createStatement()) {
        if (!c.getMetaData().getDatabaseProductName().equals("H2")) { // H2 has no read-only transaction
          s.execute("SET TRANSACTION READ ONLY"); // PostgreSQL: this transaction; MariaDB: the next one
        }
        try (ResultSet rs = s.executeQuery(sql)) {
          while (rs.next()) {
            ids.add(rs.getString(1));
          }
        }
      } catch (SQLException e) {
        throw new Reconciliation.DomainQueryFailedException(e);
      } finally {
        c.rollback();
      }
    }
    return ids;
  }

  /** {@code sql} without a final {@code ;}, after checking it is a single query. */
  private static String oneQuery(String sql) {
    String first = firstWord(sql);
    if (!first.equals("SELECT") && !first.equals("WITH")) {
      throw new IllegalArgumentException("must be a query starting with SELECT or WITH, not "
          + (first.isEmpty() ? "nothing" : first));
    }
    int end = endOfFirstStatement(sql);
    if (end < sql.length() && !blank(sql.substring(end + 1))) {
      throw new IllegalArgumentException("must be one query: it holds more after the ';' at character " + (end + 1)
          + "; remove it");
    }
    return sql.substring(0, end);
  }

  private static String firstWord(String sql) {
    int i = skipBlank(sql, 0);
    int start = i;
    while (i < sql.length() && Character.isLetter(sql.charAt(i))) {
      i++;
    }
    return sql.substring(start, i).toUpperCase(Locale.ROOT);
  }

  private static boolean blank(String text) {
    return skipBlank(text, 0) == text.length();
  }

  /** Past white space, {@code -- …} and {@code /* … *\/} comments and opening parentheses. */
  private static int skipBlank(String sql, int from) {
    int i = from;
    while (i < sql.length()) {
      char ch = sql.charAt(i);
      if (Character.isWhitespace(ch) || ch == '(') {
        i++;
      } else if (sql.startsWith("--", i)) {
        int nl = sql.indexOf('\n', i);
        i = nl < 0 ? sql.length() : nl + 1;
      } else if (sql.startsWith("/*", i)) {
        int close = sql.indexOf("*/", i + 2);
        i = close < 0 ? sql.length() : close + 2;
      } else {
        return i;
      }
    }
    return i;
  }

  /** The index of the first {@code ;} outside quotes and comments, or the length of {@code sql}. */
  private static int endOfFirstStatement(String sql) {
    int i = 0;
    while (i < sql.length()) {
      char ch = sql.charAt(i);
      if (ch == ';') {
        return i;
      }
      if (ch == '\'' || ch == '"' || ch == '`') {
        int close = sql.indexOf(ch, i + 1); // a doubled quote closes and reopens: the same for this scan
        i = close < 0 ? sql.length() : close + 1;
      } else if (ch == '$' && sql.indexOf('$', i + 1) > i) { // PostgreSQL's $tag$ … $tag$
        String tag = sql.substring(i, sql.indexOf('$', i + 1) + 1);
        int close = tag.matches("\\$[A-Za-z_0-9]*\\$") ? sql.indexOf(tag, i + tag.length()) : -2;
        i = close == -2 ? i + 1 : close < 0 ? sql.length() : close + tag.length();
      } else if (sql.startsWith("--", i) || sql.startsWith("/*", i)) {
        i = Math.max(skipBlank(sql, i), i + 1);
      } else {
        i++;
      }
    }
    return sql.length();
  }
}
