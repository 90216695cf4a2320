package io.mic.outbox.jdbc.internal;

import io.mic.outbox.DispatchOrder;
import io.mic.outbox.OutboxEvent;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Puts claimed runs in the order dispatchers expect: position in the run, then the heads' dispatch order. */
public final class Runs {
  private Runs() {}

  public static List<OutboxEvent> inWaves(List<OutboxEvent> claimed) {
    Map<List<String>, List<OutboxEvent>> runs = new HashMap<>();
    for (OutboxEvent e : claimed) {
      runs.computeIfAbsent(List.of(e.aggregateType(), e.aggregateId()), k -> new ArrayList<>()).add(e);
    }
    List<List<OutboxEvent>> ordered = new ArrayList<>(runs.values());
    ordered.forEach(run -> run.sort(DispatchOrder.WITHIN_AGGREGATE));
    ordered.sort(Comparator.comparing(run -> run.get(0), DispatchOrder.EVENTS));
    List<OutboxEvent> waves = new ArrayList<>(claimed.size());
    for (int position = 0; waves.size() < claimed.size(); position++) {
      for (List<OutboxEvent> run : ordered) {
        if (position < run.size()) {
          waves.add(run.get(position));
        }
      }
    }
    return waves;
  }
}
