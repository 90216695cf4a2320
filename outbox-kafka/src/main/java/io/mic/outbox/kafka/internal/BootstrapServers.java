package io.mic.outbox.kafka.internal;

import io.mic.outbox.InvalidConfigurationException;
import java.util.regex.Pattern;

/**
 * A bootstrap address as it may appear in a message: Kafka reads no user-info in it ({@code user:secret@host}),
 * takes it for a host, logs it with its settings and repeats it in its errors, so it is refused before a client
 * sees it, and the refusal shows it masked.
 */
public final class BootstrapServers {
  /** From the start of an entry (or after its {@code SCHEME://}) to the last {@code @} before the next entry. */
  private static final Pattern USER_INFO = Pattern.compile("(^|,)(\\s*[A-Za-z_]+://)?[^,]*@");

  private BootstrapServers() {}

  /** @throws InvalidConfigurationException {@code servers} holds credentials, named {@code option} */
  public static void requireNoCredentials(String option, String servers, String remedy) {
    if (servers != null && servers.indexOf('@') >= 0) {
      throw new InvalidConfigurationException(option + " '" + redact(servers) + "' holds credentials, which Kafka"
          + " does not read: give host:port only, and the credentials through " + remedy);
    }
  }

  /** {@code SASL_SSL://user:secret@host:9093} becomes {@code SASL_SSL://***@host:9093}, per entry. */
  public static String redact(String servers) {
    return USER_INFO.matcher(servers).replaceAll("$1$2***@");
  }
}
