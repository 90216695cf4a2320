package io.mic.outbox.faults;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

/**
 * Compares what was committed with what the broker received and what the table says, in the manner of
 * a queue checker: lost, duplicated, reordered per aggregate, stuck, dead-lettered.
 */
public final class Checker {
  private Checker() {}

  /** The ids of the table's rows in the DLQ, and the count of non-terminal ones. */
  public record TableState(Set<UUID> dlq, long stuck) {
    public static TableState read(Connection c, String table) throws SQLException {
      Set<UUID> dlq = new HashSet<>();
      long stuck;
      try (Statement s = c.createStatement()) {
        try (ResultSet rs = s.executeQuery("SELECT id FROM " + table + " WHERE status = 'DLQ'")) {
          while (rs.next()) {
            dlq.add(rs.getObject(1, UUID.class));
          }
        }
        try (ResultSet rs = s.executeQuery("SELECT count(*) FROM " + table
            + " WHERE status IN ('PENDING', 'PROCESSING')")) {
          rs.next();
          stuck = rs.getLong(1);
        }
      }
      return new TableState(dlq, stuck);
    }
  }

  public static Figures check(List<Produced> committed, List<Delivery> deliveries, TableState table, boolean ordered) {
    Map<UUID, Produced> byId = new HashMap<>();
    committed.forEach(p -> byId.put(p.id(), p));
    Set<UUID> seen = new HashSet<>();
    int duplicates = 0;
    int violations = 0;
    Map<String, Set<Long>> done = new HashMap<>(); // per aggregate: sequences delivered or dead-lettered
    for (Produced p : committed) {
      if (p.poison() && table.dlq().contains(p.id())) {
        done.computeIfAbsent(p.aggregateId(), k -> new HashSet<>()).add(p.seq());
      }
    }
    for (Delivery d : deliveries) {
      if (!seen.add(d.eventId())) {
        duplicates++;
        continue;
      }
      Set<Long> sequences = done.computeIfAbsent(d.aggregateId(), k -> new HashSet<>());
      if (ordered && d.seq() > 1 && !sequences.contains(d.seq() - 1)) {
        violations++;
      }
      sequences.add(d.seq());
    }
    int lost = 0;
    for (Produced p : committed) {
      if (!seen.contains(p.id()) && !(p.poison() && table.dlq().contains(p.id()))) {
        lost++;
      }
    }
    long dlqNotPoison = table.dlq().stream().filter(id -> byId.get(id) == null || !byId.get(id).poison()).count();
    return new Figures(committed.size(), seen.size(), lost, duplicates, violations, table.stuck(), table.dlq().size(),
        dlqNotPoison);
  }
}
