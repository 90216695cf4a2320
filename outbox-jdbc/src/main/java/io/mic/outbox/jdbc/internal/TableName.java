package io.mic.outbox.jdbc.internal;

import io.mic.outbox.InvalidConfigurationException;
import java.util.regex.Pattern;

/**
 * A validated table name, optionally schema-qualified. Only names matching a strict pattern are accepted,
 * and they are always quoted, so no text from configuration ever reaches SQL unchecked.
 */
public record TableName(String schema, String table) {
  public static final int MAX_PART_LENGTH = 63;
  private static final Pattern PART = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

  public static TableName parse(String option, String name) {
    if (name == null) {
      throw new InvalidConfigurationException(option + " is required");
    }
    String[] parts = name.split("\\.", -1);
    if (parts.length > 2 || !valid(parts[0]) || (parts.length == 2 && !valid(parts[1]))) {
      throw new InvalidConfigurationException(option + " '" + name + "' is invalid: use a name matching"
          + " [A-Za-z_][A-Za-z0-9_]* of at most " + MAX_PART_LENGTH + " characters, optionally"
          + " schema-qualified as schema.table, e.g. 'outbox' or 'app.outbox'");
    }
    return parts.length == 2 ? new TableName(parts[0], parts[1]) : new TableName(null, parts[0]);
  }

  private static boolean valid(String part) {
    return part.length() <= MAX_PART_LENGTH && PART.matcher(part).matches();
  }

  /** The name quoted with {@code quote} (the dialect's identifier quote character). */
  public String quoted(char quote) {
    String t = quote + table + quote;
    return schema == null ? t : quote + schema + quote + "." + t;
  }

  /** A name for an object derived from this table, such as an index: {@code <table>_<suffix>}, quoted. */
  public String derived(String suffix, char quote) {
    String name = table + "_" + suffix;
    if (name.length() > MAX_PART_LENGTH) {
      name = name.substring(0, MAX_PART_LENGTH);
    }
    return quote + name + quote;
  }

  /** A table beside this one, {@code <table>_<suffix>} in the same schema, quoted. */
  public String sibling(String suffix, char quote) {
    String name = table + "_" + suffix;
    if (name.length() > MAX_PART_LENGTH) {
      name = name.substring(0, MAX_PART_LENGTH);
    }
    String t = quote + name + quote;
    return schema == null ? t : quote + schema + quote + "." + t;
  }

  @Override
  public String toString() {
    return schema == null ? table : schema + "." + table;
  }
}
