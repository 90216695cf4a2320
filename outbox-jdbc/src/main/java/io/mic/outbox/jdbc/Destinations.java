package io.mic.outbox.jdbc;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.MessagePublisher;
import io.mic.outbox.jdbc.OutboxDoctor.Check;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * {@link OutboxDoctor#destinations}: the topics with live events, the busiest first, each asked of a
 * publisher's broker with {@link MessagePublisher#checkDestination}.
 */
final class Destinations {
  private final TableAccess access;
  private final String broker;

  Destinations(TableAccess access, String broker) {
    this.access = access;
    this.broker = broker;
  }

  List<Check> check(MessagePublisher publisher) throws InterruptedException {
    Map<String, Long> topics = liveTopics();
    if (topics.isEmpty()) {
      return List.of(Check.notApplicable(broker, "no topic has live events"));
    }
    List<Check> checks = new ArrayList<>();
    for (Map.Entry<String, Long> topic : topics.entrySet()) {
      String name = broker + ":" + topic.getKey();
      String figure = topic.getValue() + " live event(s)";
      try {
        publisher.checkDestination(topic.getKey());
        checks.add(Check.pass(name, figure + "; " + broker + " takes the topic"));
      } catch (InvalidConfigurationException e) {
        checks.add(Check.fail(name, figure + " that " + broker + " cannot take", e.getMessage()));
      } catch (RuntimeException e) { // the broker did not answer: asking again for each topic would only wait again
        checks.add(Check.fail(broker, "cannot ask " + broker + ": " + OutboxStoreException.describe(e),
            "check the broker's address, credentials and that it runs"));
        break;
      }
    }
    return checks;
  }

  /** Topic → live events, the busiest first, at most {@link OutboxDoctor#MAX_TOPICS}. */
  private Map<String, Long> liveTopics() {
    return access.inAutoCommit(c -> {
      Map<String, Long> topics = new LinkedHashMap<>();
      try (PreparedStatement ps = c.prepareStatement("SELECT topic, COUNT(*) FROM " + access.table
          + " WHERE status IN ('PENDING', 'PROCESSING') GROUP BY topic ORDER BY 2 DESC, 1")) {
        ps.setMaxRows(OutboxDoctor.MAX_TOPICS);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) {
            topics.put(rs.getString(1), rs.getLong(2));
          }
        }
      }
      return topics;
    });
  }
}
