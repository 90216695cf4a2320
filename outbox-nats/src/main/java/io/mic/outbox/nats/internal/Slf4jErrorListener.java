package io.mic.outbox.nats.internal;

import io.nats.client.Connection;
import io.nats.client.Consumer;
import io.nats.client.ErrorListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Routes the client's connection-level reports to SLF4J (the client's default logs through
 * java.util.logging). Exceptions are DEBUG: every failed publication is reported by the publisher itself.
 */
final class Slf4jErrorListener implements ErrorListener {
  private static final Logger LOG = LoggerFactory.getLogger("io.mic.outbox.nats.client");

  @Override
  public void errorOccurred(Connection conn, String error) {
    LOG.warn("NATS server error: {}", error);
  }

  @Override
  public void exceptionOccurred(Connection conn, Exception exp) {
    LOG.debug("NATS connection exception: {}", exp.toString());
  }

  @Override
  public void slowConsumerDetected(Connection conn, Consumer consumer) {
    LOG.warn("NATS slow consumer on the publisher's connection");
  }
}
