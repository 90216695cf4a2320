package io.mic.outbox.jdbc.internal;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.regex.Pattern;

/**
 * The PostgreSQL notification channel on which appends to one outbox table are announced:
 * {@code <table>_appends}, or {@code <schema>.<table>_appends} for a schema-qualified table, cut short
 * with a hash like {@link TableName#derivedName} past 63 characters (PostgreSQL refuses longer channel
 * names). The name is built from a validated {@link TableName}, and checked again here, because it is
 * quoted into {@code LISTEN} as an identifier; {@code pg_notify} gets it as a bound parameter. Both take it
 * verbatim, case included.
 */
public record AppendChannel(String name) {
  private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_.]{0,62}");

  public AppendChannel {
    if (name == null || !NAME.matcher(name).matches()) {
      throw new IllegalArgumentException("notification channel '" + name + "' must match " + NAME);
    }
  }

  public static AppendChannel of(TableName table) {
    String name = table.derivedName("appends");
    if (table.schema() != null) {
      String qualified = table.schema() + "." + name;
      name = qualified.length() <= TableName.MAX_PART_LENGTH ? qualified
          : new TableName(null, table.schema() + "_" + table.table()).derivedName("appends");
    }
    return new AppendChannel(name);
  }

  /** {@code LISTEN "<name>"}. */
  public String listen() {
    return "LISTEN \"" + name + "\"";
  }

  /**
   * Sends the notification within the connection's transaction: PostgreSQL delivers it at commit, drops it
   * at rollback, and folds repeated ones of one transaction into one.
   */
  public void notifyIn(Connection connection) throws SQLException {
    try (PreparedStatement ps = connection.prepareStatement("SELECT pg_notify(?, '')")) {
      ps.setString(1, name);
      ps.execute();
    }
  }

  @Override
  public String toString() {
    return name;
  }
}
