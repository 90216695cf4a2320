package io.mic.outbox.spring;

import io.mic.outbox.PublishUnavailableException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;

/**
 * Whether the Kafka cluster of {@code mic.outbox.kafka.*} answers, asked with an admin client on the same
 * settings (security included). Kept apart so that no Kafka class is loaded without {@code outbox-kafka}.
 */
final class KafkaReachability {
  private static final int TIMEOUT_MS = 5_000;

  private KafkaReachability() {}

  static void check(PublisherProperties.Kafka kafka) throws InterruptedException {
    Map<String, Object> config = new HashMap<>();
    kafka.properties().forEach((name, value) -> {
      if (AdminClientConfig.configNames().contains(name)) {
        config.put(name, value);
      }
    });
    config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, kafka.bootstrapServers());
    config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, TIMEOUT_MS);
    config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, TIMEOUT_MS);
    try (Admin admin = Admin.create(config)) {
      admin.describeCluster(new DescribeClusterOptions().timeoutMs(TIMEOUT_MS)).clusterId()
          .get(TIMEOUT_MS + 1_000L, TimeUnit.MILLISECONDS);
    } catch (ExecutionException | TimeoutException e) {
      Throwable cause = e instanceof ExecutionException ? e.getCause() : e;
      throw new PublishUnavailableException("no Kafka broker of " + kafka.bootstrapServers() + " answered within "
          + TIMEOUT_MS + " ms (" + cause + ")", cause);
    }
  }
}
