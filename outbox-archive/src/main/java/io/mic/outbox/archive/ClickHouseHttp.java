package io.mic.outbox.archive;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import io.mic.outbox.ArchiveException;
import java.io.IOException;
import java.io.InputStream;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * ClickHouse's HTTP interface, for the archiver (inserts) and the replay (streamed queries). Credentials
 * travel in the {@code X-ClickHouse-User} / {@code X-ClickHouse-Key} headers, never in the URL, and never
 * appear in a message; the answer to a refused insert quotes the rows (payloads), so only its error code is
 * kept.
 *
 * <pre>{@code
 * ClickHouseHttp http = connect(hint); // in a ClickHouseConnectionBuilder: its URL, credentials and timeouts
 * try (InputStream rows = http.query("SELECT … FORMAT JSONEachRow", "the replay query")) { … }
 * }</pre>
 */
public final class ClickHouseHttp {
  private static final int MAX_ERROR_CHARS = 500;
  private static final Pattern ERROR_CODE = Pattern.compile("^Code: (\\d+)");

  private final URI uri;
  private final String user;
  private final String password;
  private final Duration queryTimeout;
  private final String credentialsHint;
  private final HttpClient client;

  /**
   * @param user {@code null}: the server's default user
   * @param queryTimeout until the answer starts (a streamed body has no deadline)
   * @param credentialsHint where credentials are set, for the message when they are refused
   */
  ClickHouseHttp(URI uri, String user, String password, Duration connectTimeout, Duration queryTimeout,
      String credentialsHint) {
    this.uri = uri;
    this.user = user;
    this.password = password;
    this.queryTimeout = queryTimeout;
    this.credentialsHint = credentialsHint;
    // ClickHouse speaks HTTP/1.1; asking for an h2c upgrade only costs a round of negotiation
    this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(connectTimeout)
        .build();
  }

  /** Checks the credentials as they will travel in headers; the message never quotes the password. */
  public static void checkCredentials(String user, String password) {
    if (user != null && (user.isEmpty() || user.chars().anyMatch(c -> c < 0x20 || c > 0x7e))) {
      throw new IllegalArgumentException("user must be visible ASCII characters, was '" + user + "'");
    }
    if (password != null && password.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
      throw new IllegalArgumentException("password contains a control character");
    }
  }

  public URI uri() {
    return uri;
  }

  /**
   * Returns the body as it arrives; the caller closes it (which aborts the transfer).
   *
   * @param what what the query is for, e.g. "the description of table t", for error messages
   */
  public InputStream query(String sql, String what) throws InterruptedException {
    HttpResponse<InputStream> response = send(request(uri)
        .POST(HttpRequest.BodyPublishers.ofString(sql, StandardCharsets.UTF_8)), what);
    if (response.statusCode() != 200) {
      throw new ArchiveException(explain(response.statusCode(), readError(response.body(), false), what));
    }
    return response.body();
  }

  public String execute(String sql, String what) throws InterruptedException {
    try (InputStream body = query(sql, what)) {
      return new String(body.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new ArchiveException("ClickHouse at " + uri + " broke off the answer to " + what + ": " + e, e);
    }
  }

  /** Returns once ClickHouse answered 200, i.e. the block is written. */
  public void insert(String insert, byte[] rows, String what) throws InterruptedException {
    URI target = URI.create(uri + "?query=" + URLEncoder.encode(insert, StandardCharsets.UTF_8));
    HttpResponse<InputStream> response = send(request(target).POST(HttpRequest.BodyPublishers.ofByteArray(rows)),
        what);
    if (response.statusCode() != 200) {
      throw new ArchiveException(explain(response.statusCode(), readError(response.body(), true), what));
    }
    try (InputStream done = response.body()) {
      done.readAllBytes(); // ClickHouse's summary, if any: read so the connection can be reused
    } catch (IOException e) {
      throw new ArchiveException("ClickHouse at " + uri + " broke off the answer to " + what
          + " (the outcome is unknown): " + e, e);
    }
  }

  /** Column name to type; {@code table} is the name as configured, for messages. */
  public Map<String, String> columns(String quotedTable, String table) throws InterruptedException {
    Map<String, String> columns = new HashMap<>();
    String what = "the description of table " + table;
    for (String line : execute(ClickHouseSql.describe(quotedTable), what).split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      try (JsonParser p = JsonText.FACTORY.createParser(line)) {
        String name = null;
        String type = null;
        p.nextToken();
        while (p.nextToken() == JsonToken.FIELD_NAME) {
          String field = p.currentName();
          p.nextToken();
          if (field.equals("name")) {
            name = p.getText();
          } else if (field.equals("type")) {
            type = p.getText();
          } else {
            p.skipChildren();
          }
        }
        if (name != null && type != null) {
          columns.put(name, type);
        }
      } catch (JsonProcessingException e) {
        throw new ArchiveException("ClickHouse sent an unreadable description of table " + table + ": "
            + e.getOriginalMessage());
      } catch (IOException e) {
        throw new ArchiveException("cannot read the description of ClickHouse table " + table + ": " + e, e);
      }
    }
    return columns;
  }

  private HttpRequest.Builder request(URI target) {
    HttpRequest.Builder request = HttpRequest.newBuilder(target).timeout(queryTimeout)
        .header("Content-Type", "text/plain; charset=UTF-8");
    if (user != null) {
      request.header("X-ClickHouse-User", user);
      request.header("X-ClickHouse-Key", password == null ? "" : password);
    }
    return request;
  }

  private HttpResponse<InputStream> send(HttpRequest.Builder request, String what) throws InterruptedException {
    try {
      return client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
    } catch (HttpConnectTimeoutException | ConnectException e) {
      throw new ArchiveException("ClickHouse is not reachable at " + uri + " (" + e + "): check the URL"
          + " and that the server is running", e);
    } catch (HttpTimeoutException e) {
      throw new ArchiveException("ClickHouse did not answer " + what + " within " + queryTimeout, e);
    } catch (IOException e) {
      throw new ArchiveException("ClickHouse at " + uri + " failed while sending " + what + ": " + e, e);
    }
  }

  private String explain(int status, String error, String what) {
    if (status == 401 || status == 403 || error.startsWith("Code: 192") || error.startsWith("Code: 193")
        || error.startsWith("Code: 516") || error.contains("error code 192") || error.contains("error code 193")
        || error.contains("error code 516")) {
      return "ClickHouse at " + uri + " refused " + what + " (HTTP " + status + "): it refused the credentials of"
          + " user '" + (user == null ? "default" : user) + "' (" + error + "): set " + credentialsHint;
    }
    return "ClickHouse at " + uri + " answered HTTP " + status + " to " + what + ": " + error;
  }

  private static String readError(InputStream body, boolean rows) {
    try (InputStream in = body) {
      byte[] bytes = in.readNBytes(MAX_ERROR_CHARS * 4);
      return serverError(new String(bytes, StandardCharsets.UTF_8), rows);
    } catch (IOException e) {
      return "(no error text: " + e.getMessage() + ")";
    }
  }

  /** The answer to an insert ({@code rows}) quotes the rows (payloads, personal data): only its code is kept. */
  static String serverError(String body, boolean rows) {
    String text = body.strip();
    if (rows) {
      Matcher code = ERROR_CODE.matcher(text);
      return code.find() ? "ClickHouse error code " + code.group(1) + " (its text is left out: it quotes the rows)"
          : "no ClickHouse error code (its text is left out: it may quote the rows)";
    }
    return text.length() > MAX_ERROR_CHARS ? text.substring(0, MAX_ERROR_CHARS) + "…" : text;
  }
}
