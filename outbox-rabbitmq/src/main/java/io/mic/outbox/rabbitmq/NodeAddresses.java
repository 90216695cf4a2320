package io.mic.outbox.rabbitmq;

import com.rabbitmq.client.Address;
import com.rabbitmq.client.ConnectionFactory;
import io.mic.outbox.InvalidConfigurationException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The nodes of {@link RabbitMqPublisher.Builder#addresses}: {@code host[:port]} entries separated by commas,
 * parsed once at {@code build()}. A value that looks like a URI is refused without quoting it, since it may
 * carry a password.
 */
final class NodeAddresses {
  /** A host name, an IPv4 address or a bracketed IPv6 address, then an optional port. */
  private static final Pattern ENTRY = Pattern.compile("(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?");
  private static final String EXAMPLE = "e.g. .addresses(\"rabbit1:5672,rabbit2:5672,rabbit3:5672\")";

  private NodeAddresses() {}

  /**
   * The nodes in the order given; an entry without a port takes the scheme's (5672, or 5671 with TLS).
   *
   * @throws InvalidConfigurationException naming the entry that is wrong and how to fix it
   */
  static List<Address> parse(String value, boolean tls) {
    if (value.contains("@") || value.contains("/")) {
      throw new InvalidConfigurationException("addresses must be host:port pairs separated by commas, not a URI:"
          + " keep the credentials and virtual host in uri(...) or the connectionFactory, and list the nodes"
          + " here, " + EXAMPLE);
    }
    if (value.isBlank()) {
      throw new InvalidConfigurationException("addresses must name at least one host:port, " + EXAMPLE
          + ", was '" + value + "'; omit it to connect to the host of uri(...)");
    }
    String[] entries = value.split(",", -1);
    List<Address> nodes = new ArrayList<>(entries.length);
    for (int i = 0; i < entries.length; i++) {
      String entry = entries[i].trim();
      Matcher m = ENTRY.matcher(entry);
      int port = m.matches() && m.group(2) != null ? Integer.parseInt(m.group(2)) : -1;
      if (!m.matches() || m.group(2) != null && (port < 1 || port > 65_535)) {
        throw new InvalidConfigurationException("addresses entry " + (i + 1) + " of '" + value + "' is "
            + (entry.isEmpty() ? "empty" : "'" + entry + "', not host:port with a port from 1 to 65535")
            + ": list host:port pairs separated by commas, " + EXAMPLE);
      }
      nodes.add(new Address(m.group(1), port < 0 ? (tls ? ConnectionFactory.DEFAULT_AMQP_OVER_SSL_PORT
          : ConnectionFactory.DEFAULT_AMQP_PORT) : port));
    }
    return List.copyOf(nodes);
  }

  /** {@code amqp://h1:5672,h2:5672/vhost}: the nodes and virtual host, without credentials. */
  static String display(ConnectionFactory factory, List<Address> nodes) {
    StringBuilder s = new StringBuilder(factory.isSSL() ? "amqps://" : "amqp://");
    for (int i = 0; i < nodes.size(); i++) {
      s.append(i == 0 ? "" : ",").append(nodes.get(i).getHost()).append(':').append(nodes.get(i).getPort());
    }
    String vhost = factory.getVirtualHost() == null ? "/" : factory.getVirtualHost();
    return s.append('/').append(vhost.replace("/", "%2F")).toString();
  }
}
