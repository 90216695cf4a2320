package io.mic.replay.internal;

import io.mic.replay.ReplayInputException;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * Sends queries to ClickHouse's HTTP interface and streams the answers. Credentials travel in the
 * {@code X-ClickHouse-User} / {@code X-ClickHouse-Key} headers, never in the URL, and never appear in a
 * message.
 */
public final class ClickHouseHttp {
  private static final int MAX_ERROR_CHARS = 500;

  private final URI uri;
  private final String user;
  private final String password;
  private final Duration queryTimeout;
  private final HttpClient client;

  public ClickHouseHttp(URI uri, String user, String password, Duration connectTimeout, Duration queryTimeout) {
    this.uri = uri;
    this.user = user;
    this.password = password;
    this.queryTimeout = queryTimeout;
    // ClickHouse speaks HTTP/1.1; asking for an h2c upgrade only costs a round of negotiation
    this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(connectTimeout)
        .build();
  }

  /**
   * Runs {@code sql} and returns the body as it arrives; the caller closes it (which aborts the transfer).
   *
   * @param what what the query is for, e.g. "the table description", for error messages
   */
  public InputStream query(String sql, String what) throws InterruptedException {
    HttpRequest.Builder request = HttpRequest.newBuilder(uri)
        .timeout(queryTimeout) // until the response starts; the streamed body has no deadline
        .header("Content-Type", "text/plain; charset=UTF-8")
        .POST(HttpRequest.BodyPublishers.ofString(sql, StandardCharsets.UTF_8));
    if (user != null) {
      request.header("X-ClickHouse-User", user);
      request.header("X-ClickHouse-Key", password == null ? "" : password);
    }
    HttpResponse<InputStream> response;
    try {
      response = client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
    } catch (HttpConnectTimeoutException | ConnectException e) {
      throw new ReplayInputException("ClickHouse is not reachable at " + uri + " (" + e + "): check the URL"
          + " and that the server is running", e);
    } catch (HttpTimeoutException e) {
      throw new ReplayInputException("ClickHouse did not answer " + what + " within " + queryTimeout, e);
    } catch (IOException e) {
      throw new ReplayInputException("ClickHouse at " + uri + " failed while sending " + what + ": " + e, e);
    }
    if (response.statusCode() != 200) {
      String error = readError(response.body());
      throw new ReplayInputException(explain(response.statusCode(), error, what));
    }
    return response.body();
  }

  private String explain(int status, String error, String what) {
    if (status == 401 || status == 403 || error.startsWith("Code: 192") || error.startsWith("Code: 193")
        || error.startsWith("Code: 516")) {
      return "ClickHouse at " + uri + " refused the credentials of user '" + (user == null ? "default" : user)
          + "' (" + error + "): set --clickhouse-user/--clickhouse-password or CLICKHOUSE_USER/CLICKHOUSE_PASSWORD";
    }
    return "ClickHouse at " + uri + " answered HTTP " + status + " to " + what + ": " + error;
  }

  private static String readError(InputStream body) {
    try (InputStream in = body) {
      byte[] bytes = in.readNBytes(MAX_ERROR_CHARS * 4);
      String text = new String(bytes, StandardCharsets.UTF_8).strip();
      return text.length() > MAX_ERROR_CHARS ? text.substring(0, MAX_ERROR_CHARS) + "…" : text;
    } catch (IOException e) {
      return "(no error text: " + e.getMessage() + ")";
    }
  }
}
