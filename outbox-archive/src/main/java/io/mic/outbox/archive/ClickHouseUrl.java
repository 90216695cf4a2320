package io.mic.outbox.archive;

import java.net.URI;
import java.net.URISyntaxException;

/**
 * Checks the URL of ClickHouse's HTTP interface. A URL may carry a password (user-info, a {@code password}
 * query parameter), so a message shows at most its host and port, and only once no user-info is in it.
 */
final class ClickHouseUrl {
  private static final String EXAMPLE = "http://127.0.0.1:8123";

  private ClickHouseUrl() {}

  /**
   * Returns the URL with a path ({@code /} when it has none); a message starts with "url".
   *
   * @param credentials where credentials go instead, for the messages (e.g. the options that take them)
   */
  public static URI parse(String url, String credentials) {
    if (url == null || url.isBlank()) {
      throw new IllegalArgumentException("url is required, e.g. " + EXAMPLE);
    }
    if (url.indexOf('@') >= 0) {
      // user-info, maybe with a password holding '/', '?' or '#': whatever else is wrong, repeat none of it
      throw new IllegalArgumentException("url must not contain credentials: pass them as " + credentials);
    }
    URI uri;
    try {
      uri = new URI(url);
    } catch (URISyntaxException e) {
      throw new IllegalArgumentException("url is not a valid URL (" + e.getReason() + " at index " + e.getIndex()
          + "), e.g. " + EXAMPLE);
    }
    if (uri.getRawUserInfo() != null) {
      throw new IllegalArgumentException("url must not contain credentials: pass them as " + credentials);
    }
    if (!("http".equalsIgnoreCase(uri.getScheme()) || "https".equalsIgnoreCase(uri.getScheme()))) {
      throw new IllegalArgumentException("url must start with http:// or https://, e.g. " + EXAMPLE);
    }
    if (uri.getRawQuery() != null) {
      throw new IllegalArgumentException("url must not have a query string (settings and passwords do not belong"
          + " there): use e.g. " + EXAMPLE + ", credentials as " + credentials
          + ", and the database in the table (db.outbox_archive)");
    }
    if (uri.getRawFragment() != null) {
      throw new IllegalArgumentException("url must not have a fragment ('#…'): use e.g. " + EXAMPLE);
    }
    if (uri.getHost() == null || uri.getPort() == 0 || uri.getPort() > 65535) {
      // no user-info, query or fragment (checked above): the authority is only host and port
      throw new IllegalArgumentException("url host '" + uri.getRawAuthority() + "' is not host[:port]: a host name"
          + " has letters, digits, '-' and '.' (no '_'), a port is 1 to 65535; e.g. " + EXAMPLE);
    }
    return uri.getRawPath() == null || uri.getRawPath().isEmpty() ? uri.resolve("/") : uri;
  }
}
