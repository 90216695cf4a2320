package io.mic.outbox;

/**
 * A builder was given an impossible option or combination (raised by {@code build()}), or an operation an
 * impossible argument such as a negative retention.
 */
public class InvalidConfigurationException extends OutboxException {
  private static final long serialVersionUID = 1L;

  public InvalidConfigurationException(String message) {
    super(message);
  }
}
