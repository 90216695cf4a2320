package io.mic.replay.internal;

/** URLs as they may appear in messages: without the user and password they may carry. */
public final class Urls {
  private Urls() {}

  /** {@code nats://user:secret@host:4222} becomes {@code nats://***@host:4222}. */
  public static String redact(String url) {
    int scheme = url.indexOf("://");
    int start = scheme < 0 ? 0 : scheme + 3;
    int at = url.indexOf('@', start);
    int slash = url.indexOf('/', start);
    if (at < 0 || (slash >= 0 && slash < at)) {
      return url;
    }
    return url.substring(0, start) + "***" + url.substring(at);
  }
}
