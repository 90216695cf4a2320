package io.mic.outbox.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;

/** What the benchmark mains share: {@code --option value} arguments, the report file, the machine's state. */
final class BenchSupport {
  private BenchSupport() {}

  static Map<String, String> parse(String[] args) {
    Map<String, String> options = new LinkedHashMap<>();
    for (int i = 0; i < args.length; i += 2) {
      if (!args[i].startsWith("--") || i + 1 >= args.length) {
        throw new IllegalArgumentException("expected --option value, got " + args[i]);
      }
      options.put(args[i].substring(2), args[i + 1]);
    }
    return options;
  }

  /** Writes the report, creating the directory; says where on stderr. */
  static void write(Path out, String report) throws IOException {
    if (out.toAbsolutePath().getParent() != null) {
      Files.createDirectories(out.toAbsolutePath().getParent());
    }
    Files.writeString(out, report);
    System.err.println("written to " + out.toAbsolutePath());
  }

  /** The 1, 5 and 15 minute load averages (Linux), e.g. {@code 2.31 1.80 1.02}; "n/a" elsewhere. */
  static String loadAverage() {
    try {
      String[] parts = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
      return parts[0] + " " + parts[1] + " " + parts[2];
    } catch (IOException | RuntimeException e) {
      return "n/a";
    }
  }

  /** Drops a benchmark's PostgreSQL outbox table and the tables beside it (sequences, locks, control). */
  static void dropOutbox(DataSource ds, String table) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
      for (String suffix : new String[] {"", "_sequences", "_locks", "_control"}) {
        s.execute("DROP TABLE IF EXISTS \"" + table + suffix + "\"");
      }
    }
  }

  static String postgresSettings(DataSource ds) throws SQLException {
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT current_setting('server_version'), current_setting('synchronous_commit'),"
            + " current_setting('shared_buffers')")) {
      rs.next();
      return "PostgreSQL " + rs.getString(1) + " (synchronous_commit=" + rs.getString(2) + ", shared_buffers="
          + rs.getString(3) + ")";
    }
  }
}
