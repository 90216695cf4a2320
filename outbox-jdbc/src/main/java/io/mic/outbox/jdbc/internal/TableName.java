package io.mic.outbox.jdbc.internal;

import io.mic.outbox.InvalidConfigurationException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
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

  /** A name for an object derived from this table, such as an index: {@link #derivedName}, quoted. */
  public String derived(String suffix, char quote) {
    return quote + derivedName(suffix) + quote;
  }

  /** A table beside this one, {@link #derivedName} in the same schema, quoted. */
  public String sibling(String suffix, char quote) {
    String t = quote + derivedName(suffix) + quote;
    return schema == null ? t : quote + schema + quote + "." + t;
  }

  /**
   * The unquoted name of an object derived from this table: {@code <table>_<suffix>} when that fits in
   * {@link #MAX_PART_LENGTH} characters, else the start of the table name, a hash of the whole name and the
   * suffix, {@code <start>_<8 hex digits>_<suffix>}. Databases cut longer names short (PostgreSQL) or
   * refuse them (MariaDB); cut short, the names of one table's indexes can collide, and silently
   * {@code IF NOT EXISTS} then skips one.
   */
  public String derivedName(String suffix) {
    String name = table + "_" + suffix;
    if (name.length() <= MAX_PART_LENGTH) {
      return name;
    }
    String hash = hash(table);
    int keep = MAX_PART_LENGTH - suffix.length() - hash.length() - 2;
    return table.substring(0, keep) + "_" + hash + "_" + suffix;
  }

  private static String hash(String text) {
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
      return HexFormat.of().formatHex(digest, 0, 4);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is missing from this JVM", e); // every JVM must have it
    }
  }

  @Override
  public String toString() {
    return schema == null ? table : schema + "." + table;
  }
}
