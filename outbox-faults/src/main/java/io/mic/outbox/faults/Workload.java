package io.mic.outbox.faults;

import io.mic.outbox.OutboxEvent;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The shape of the events the suite produces: one topic, a per-aggregate sequence in the payload. */
public final class Workload {
  public static final String AGGREGATE_TYPE = "account";
  public static final String TOPIC = "account.changed";
  private static final Pattern SEQ = Pattern.compile("\"seq\":(\\d+)");

  private Workload() {}

  public static OutboxEvent event(String aggregateId, long seq, boolean poison) {
    return OutboxEvent.builder().aggregate(AGGREGATE_TYPE, aggregateId).topic(TOPIC)
        .payload("{\"aggregate\":\"" + aggregateId + "\",\"seq\":" + seq + (poison ? ",\"poison\":true" : "") + "}")
        .build();
  }

  public static long sequenceOf(String payload) {
    Matcher m = SEQ.matcher(payload);
    return m.find() ? Long.parseLong(m.group(1)) : -1;
  }

  public static boolean isPoison(String payload) {
    return payload.contains("\"poison\":true");
  }
}
