package io.mic.replay;

import io.mic.outbox.InvalidConfigurationException;

/**
 * A replay option is wrong, or what it names does not exist (a NATS stream). {@link #option()} names the
 * builder option, so the command can name its flag. The command exits with 2.
 *
 * <pre>{@code
 * catch (ReplayConfigurationException e) { System.err.println(e.option() + ": " + e.getMessage()); }
 * }</pre>
 */
public class ReplayConfigurationException extends InvalidConfigurationException {
  private static final long serialVersionUID = 1L;

  private final String option;

  public ReplayConfigurationException(String option, String message) {
    super(message);
    this.option = option;
  }

  /** The builder option at fault, e.g. {@code stream}, {@code table}, {@code batchId}. */
  public String option() {
    return option;
  }
}
