package io.mic.outbox.kafka.internal;

import io.mic.outbox.InvalidConfigurationException;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.Predicate;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The producer settings of a publisher: the user's, checked, plus the ones the outbox relies on.
 *
 * <p>Forced: {@code acks=all} (an acknowledged record is on every in-sync replica),
 * {@code enable.idempotence=true} (a retried batch is written once and never overtakes the previous one),
 * byte-array serializers. Checked: at most 5 requests in flight per connection (the limit under which the
 * idempotent producer keeps order), {@code retries} above 0, no {@code transactional.id}. Defaulted when
 * absent: the timeouts, so that a send fails well inside the dispatcher's lease.
 *
 * <p>Messages name the setting and, for the checked ones, the value; no value of any other setting
 * (such as {@code sasl.jaas.config}) ever appears in a message.
 */
public final class ProducerSettings {
  public static final int MAX_IN_FLIGHT_LIMIT = 5;

  private static final Set<String> ALL_ACKS = Set.of("all", "-1");

  private ProducerSettings() {}

  /** Checks {@code user} and returns the properties to create the producer with. */
  public static Properties of(Map<String, String> user, Duration deliveryTimeout, Duration requestTimeout,
      Duration maxBlock) {
    Properties p = new Properties();
    p.putAll(user);
    check(user, ProducerConfig.ACKS_CONFIG, v -> ALL_ACKS.contains(v.toLowerCase(Locale.ROOT)),
        "must be 'all': with fewer acknowledgements a record the outbox marked dispatched can be lost when"
            + " a broker fails; remove the setting");
    check(user, ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, v -> v.equalsIgnoreCase("true"),
        "must be 'true': without idempotence a retried batch can be written twice or overtake the next one,"
            + " which breaks per-aggregate order; remove the setting");
    check(user, ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, v -> between(v, 1, MAX_IN_FLIGHT_LIMIT),
        "must be between 1 and " + MAX_IN_FLIGHT_LIMIT + ": above that the idempotent producer no longer"
            + " keeps the order of an aggregate's records");
    check(user, ProducerConfig.RETRIES_CONFIG, v -> between(v, 1, Integer.MAX_VALUE),
        "must be > 0: the idempotent producer needs retries; bound the time with deliveryTimeout instead");
    check(user, ProducerConfig.TRANSACTIONAL_ID_CONFIG, v -> false,
        "is not supported: the publisher sends outside Kafka transactions; the outbox table is the"
            + " transaction. Remove the setting");
    check(user, ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ProducerSettings::isByteArraySerializer,
        "must be " + ByteArraySerializer.class.getName() + ": the publisher encodes keys itself; use keyOf(...)");
    check(user, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ProducerSettings::isByteArraySerializer,
        "must be " + ByteArraySerializer.class.getName() + ": the payload is the event's JSON text as UTF-8");
    for (String timeout : new String[] {ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG,
        ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, ProducerConfig.MAX_BLOCK_MS_CONFIG}) {
      check(user, timeout, v -> between(v, 1, Integer.MAX_VALUE), "must be a number of milliseconds > 0");
    }
    if (user.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG) == null
        || user.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG).isBlank()) {
      throw new InvalidConfigurationException("bootstrapServers is required: .bootstrapServers(\"127.0.0.1:9092\")"
          + " or .producer(existingProducer)");
    }
    BootstrapServers.requireNoCredentials("bootstrapServers", user.get(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG),
        "property(\"sasl.jaas.config\", …)");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.putIfAbsent(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(deliveryTimeout.toMillis()));
    p.putIfAbsent(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(requestTimeout.toMillis()));
    p.putIfAbsent(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(maxBlock.toMillis()));
    long delivery = Long.parseLong(p.getProperty(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG));
    long request = Long.parseLong(p.getProperty(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG));
    long linger = user.containsKey(ProducerConfig.LINGER_MS_CONFIG)
        ? parse(ProducerConfig.LINGER_MS_CONFIG, user.get(ProducerConfig.LINGER_MS_CONFIG)) : 5;
    if (delivery < request + linger) {
      throw new InvalidConfigurationException(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG + " (" + delivery
          + " ms) must be at least " + ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG + " + "
          + ProducerConfig.LINGER_MS_CONFIG + " (" + (request + linger) + " ms): raise deliveryTimeout or lower"
          + " requestTimeout");
    }
    return p;
  }

  /** Milliseconds the producer may take for one send: blocking in send() plus the delivery timeout. */
  public static long sendBoundMillis(Properties p) {
    return Long.parseLong(p.getProperty(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG))
        + Long.parseLong(p.getProperty(ProducerConfig.MAX_BLOCK_MS_CONFIG));
  }

  private static void check(Map<String, String> user, String name, Predicate<String> rule, String why) {
    String value = user.get(name);
    if (value != null && !rule.test(value.trim())) {
      throw new InvalidConfigurationException("producer setting " + name + "=" + value + " " + why);
    }
  }

  private static boolean between(String value, long min, long max) {
    try {
      long v = Long.parseLong(value.trim());
      return v >= min && v <= max;
    } catch (NumberFormatException e) {
      return false;
    }
  }

  private static long parse(String name, String value) {
    try {
      return Long.parseLong(value.trim());
    } catch (NumberFormatException e) {
      throw new InvalidConfigurationException("producer setting " + name + "=" + value
          + " must be a number of milliseconds");
    }
  }

  private static boolean isByteArraySerializer(String value) {
    return value.equals(ByteArraySerializer.class.getName());
  }
}
