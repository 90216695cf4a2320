package io.mic.outbox.spring;

import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Builds a publisher from properties and checks its broker before the application starts, so that a wrong
 * URI or a missing exchange fails the start with the property to fix, instead of the first event waiting
 * silently. Every message names the property; none quotes a password (the publishers' own messages leave
 * it out).
 */
final class PublisherStartupCheck {
  static final String OPT_OUT = "mic.outbox.startup-check=false";
  private static final Logger LOG = LoggerFactory.getLogger(PublisherStartupCheck.class);

  private PublisherStartupCheck() {}

  /** A check of the broker; it may block on the network. */
  @FunctionalInterface
  interface Check {
    void run() throws Exception;
  }

  /** Two brokers configured: the first bean would win and the other be ignored without a word. */
  static void requireOneBroker(OutboxProperties properties) {
    List<String> set = new ArrayList<>();
    if (properties.nats().url() != null) {
      set.add("mic.outbox.nats.url");
    }
    if (properties.rabbitmq().uri() != null) {
      set.add("mic.outbox.rabbitmq.uri");
    } else if (properties.rabbitmq().addresses() != null) {
      set.add("mic.outbox.rabbitmq.addresses");
    }
    if (properties.kafka().bootstrapServers() != null) {
      set.add("mic.outbox.kafka.bootstrap-servers");
    }
    if (set.size() > 1) {
      throw new InvalidConfigurationException("invalid mic.outbox configuration: " + String.join(" and ", set)
          + " are both set, but the dispatcher publishes to one broker: keep one, or declare the DispatchFn bean"
          + " yourself");
    }
  }

  /** Builds the publisher; a builder's refusal names the property group it came from. */
  static <T> T built(String prefix, Supplier<T> build) {
    try {
      return build.get();
    } catch (InvalidConfigurationException e) {
      throw withCause(new InvalidConfigurationException("invalid mic.outbox configuration: " + prefix + ".*: "
          + e.getMessage()), e);
    }
  }

  /**
   * Runs {@code check}; a destination that is missing fails naming {@code destinationProperty}, a broker that
   * cannot be reached naming {@code brokerProperty}. The publisher is closed when the check fails.
   */
  static void run(AutoCloseable publisher, String brokerProperty, String destinationProperty, Check check) {
    try {
      check.run();
      LOG.info("mic-outbox: publishing to {}", publisher);
    } catch (InvalidConfigurationException e) {
      throw failed(publisher, "invalid mic.outbox configuration: check " + destinationProperty + ": "
          + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw failed(publisher, "interrupted while checking the broker of " + brokerProperty, e);
    } catch (Exception e) {
      String reason = e instanceof OutboxException ? e.getMessage() : e.toString();
      throw failed(publisher, "invalid mic.outbox configuration: check " + brokerProperty + ": the broker cannot be"
          + " used: " + reason + ". Fix " + brokerProperty + ", or set " + OPT_OUT + " to start without it"
          + " (events then wait until it can be reached)", e);
    }
  }

  private static InvalidConfigurationException failed(AutoCloseable publisher, String message, Exception cause) {
    try {
      publisher.close();
    } catch (Exception e) {
      cause.addSuppressed(e);
    }
    return withCause(new InvalidConfigurationException(message), cause);
  }

  private static InvalidConfigurationException withCause(InvalidConfigurationException e, Exception cause) {
    e.initCause(cause);
    return e;
  }
}
