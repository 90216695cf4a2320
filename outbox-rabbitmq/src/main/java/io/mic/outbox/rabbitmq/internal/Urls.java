package io.mic.outbox.rabbitmq.internal;

/** URIs as they may appear in messages and logs: without the user and password they may carry. */
public final class Urls {
  private Urls() {}

  /**
   * {@code amqp://user:secret@host:5672/vhost} becomes {@code amqp://***@host:5672/vhost}. Everything up to
   * the last {@code @} goes, so a password with an unescaped {@code /} or {@code @} never shows.
   */
  public static String redact(String uri) {
    if (uri == null) {
      return null;
    }
    int scheme = uri.indexOf("://");
    int start = scheme < 0 ? 0 : scheme + 3;
    int at = uri.lastIndexOf('@');
    return at < start ? uri : uri.substring(0, start) + "***" + uri.substring(at);
  }
}
