package io.mic.outbox.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/** One publication the broker took, in the broker's order; {@code pid} is the publishing process (0 unknown). */
public record Delivery(UUID eventId, String aggregateId, long seq, long pid) {

  /** The recording sink's file, in the order the lines were written. */
  public static List<Delivery> readLog(Path log) throws IOException {
    List<Delivery> all = new ArrayList<>();
    if (!Files.exists(log)) {
      return all;
    }
    for (String line : Files.readAllLines(log)) {
      String[] f = line.split(" ");
      all.add(new Delivery(UUID.fromString(f[0]), f[1], Long.parseLong(f[2]), Long.parseLong(f[3])));
    }
    return all;
  }
}
