package io.mic.outbox.jdbc.archive;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.mic.outbox.InvalidConfigurationException;
import io.mic.outbox.OutboxEvent;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ClickHouse table as archive, written over the HTTP interface ({@code INSERT … FORMAT JSONEachRow}) in
 * the layout {@code mic-events-replay --from-clickhouse} reads: columns {@code id}, {@code topic},
 * {@code aggregate_type}, {@code aggregate_id}, {@code created_at}, {@code payload} (JSON text),
 * {@code headers} (a JSON object as text). {@link #createTable()} creates it.
 *
 * <p>{@code created_at}: {@code DateTime64(6, 'UTC')} where the server has it (ClickHouse 20.1 and later);
 * older servers (18.x, Debian's package) only have {@code DateTime}, whole seconds: the sub-second part of
 * {@code created_at} is then lost in this archive, and events of the same second replay in id order
 * (deterministic, but not necessarily creation order). Use the JSON Lines archive as well where that matters.
 *
 * <p>One {@link #archive} call is one {@code INSERT}; it returns once ClickHouse answered 200, i.e. the
 * block is written. MergeTree does not deduplicate: an event archived twice (a crash between the archive
 * and the purge) is stored twice; the replay returns both copies next to each other (same created_at and
 * id), consumers deduplicate by the original id. Credentials go in the {@code X-ClickHouse-User} /
 * {@code X-ClickHouse-Key} headers and are never logged.
 */
public final class ClickHouseArchive implements ArchiveSink {
  public static final String DEFAULT_TABLE = "outbox_archive";

  private static final Logger LOG = LoggerFactory.getLogger(ClickHouseArchive.class);
  private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,63}");
  private static final Pattern DATETIME = Pattern.compile("(?:Nullable\\()?DateTime(?:\\('[^']*'\\))?\\)?");
  private static final Pattern DATETIME64_UTC =
      Pattern.compile("(?:Nullable\\()?DateTime64\\(\\d, *'(?:UTC|Etc/UTC)'\\)\\)?");
  private static final int MAX_ERROR_TEXT = 500;
  private static final String STRING = "(?:LowCardinality\\()?(?:Nullable\\()?String\\)?\\)?";
  /** The columns the archive writes text into, and the types that take it. */
  private static final Map<String, Pattern> TEXT_COLUMNS = new LinkedHashMap<>();

  static {
    TEXT_COLUMNS.put("id", Pattern.compile(STRING + "|(?:Nullable\\()?UUID\\)?"));
    for (String name : List.of("topic", "aggregate_type", "aggregate_id", "payload", "headers")) {
      TEXT_COLUMNS.put(name, Pattern.compile(STRING));
    }
  }

  private static final Pattern INTEGER = Pattern.compile("(?:Nullable\\()?U?Int(?:8|16|32|64)\\)?");
  private static final Pattern ERROR_CODE = Pattern.compile("^Code: (\\d+)");

  private final URI uri;
  private final String table;
  private final String quotedTable;
  private final String user;
  private final String password;
  private final Duration timeout;
  private final HttpClient client;
  /** Whether created_at is DateTime64, once the table was described. */
  private volatile Boolean dateTime64;
  /** The envelope's columns the table has, once it was described (a table made before has none). */
  private volatile Set<String> envelopeColumns = Set.of();

  private ClickHouseArchive(Builder b, URI uri, String quotedTable) {
    this.uri = uri;
    this.table = b.table;
    this.quotedTable = quotedTable;
    this.user = b.user;
    this.password = b.password;
    this.timeout = b.timeout;
    this.client = HttpClient.newBuilder().connectTimeout(b.timeout).build();
  }

  public static Builder builder() {
    return new Builder();
  }

  /**
   * Creates the table if it does not exist: {@code MergeTree}, partitioned by month, ordered by
   * {@code (topic, created_at, id)} as the replay reads it.
   */
  public void createTable() {
    String version = execute("SELECT version()", null, "the server version").trim();
    boolean has64 = majorVersion(version) >= 20;
    String time = has64 ? "DateTime64(6, 'UTC')" : "DateTime('UTC')";
    execute("CREATE TABLE IF NOT EXISTS " + quotedTable + " (id String, topic String,"
        + " aggregate_type Nullable(String), aggregate_id Nullable(String), created_at " + time + ","
        + " payload String, headers String, sequence UInt64 DEFAULT 0, schema_version UInt32 DEFAULT 1,"
        + " occurred_at Nullable(" + time + "), trace_parent Nullable(String)) ENGINE = MergeTree PARTITION BY toYYYYMM(created_at)"
        + " ORDER BY (topic, created_at, id)", null, "the creation of table " + table);
    dateTime64 = null;
    LOG.info("ClickHouse archive table {} ready (created_at {}, server {})", table, time, version);
  }

  static int majorVersion(String version) {
    try {
      return Integer.parseInt(version.split("\\.")[0]);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  @Override
  public void archive(List<OutboxEvent> events) {
    if (events.isEmpty()) {
      return;
    }
    boolean wide = timeColumn();
    ByteArrayOutputStream body = new ByteArrayOutputStream(events.size() * 256);
    try (JsonGenerator g = ArchiveRecords.FACTORY.createGenerator(body)) {
      for (OutboxEvent e : events) {
        ArchiveRecords.writeClickHouseRow(g, e, wide, envelopeColumns);
        g.writeRaw('\n');
      }
    } catch (IOException e) {
      throw new ArchiveException("cannot encode events for ClickHouse: " + e, e);
    }
    execute("INSERT INTO " + quotedTable + " FORMAT JSONEachRow", body.toByteArray(),
        "the insert of " + events.size() + " event(s) into table " + table);
    LOG.debug("archived {} event(s) to ClickHouse table {}", events.size(), table);
  }

  /** Describes the table once: it must have the replay's columns; returns whether created_at is DateTime64. */
  private boolean timeColumn() {
    Boolean known = dateTime64;
    if (known != null) {
      return known;
    }
    Map<String, String> columns = new HashMap<>();
    String description = execute("DESCRIBE TABLE " + quotedTable + " FORMAT JSONEachRow", null,
        "the description of table " + table);
    for (String line : description.split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      try (JsonParser p = ArchiveRecords.FACTORY.createParser(line)) {
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
      } catch (IOException e) {
        throw new ArchiveException("ClickHouse sent an unreadable description of table " + table + ": " + e, e);
      }
    }
    for (String required : List.of("id", "topic", "aggregate_type", "aggregate_id", "created_at", "payload",
        "headers")) {
      if (!columns.containsKey(required)) {
        throw new ArchiveException("ClickHouse table " + table + " has no column '" + required
            + "': create it with ClickHouseArchive.createTable()");
      }
    }
    // a wrong type fails the insert with an answer that quotes the rows (payloads): refuse it before
    for (Map.Entry<String, Pattern> text : TEXT_COLUMNS.entrySet()) {
      String name = text.getKey();
      if (!text.getValue().matcher(columns.get(name)).matches()) {
        throw new ArchiveException("column " + name + " of ClickHouse table " + table + " is " + columns.get(name)
            + "; expected " + (name.equals("id") ? "String or UUID" : "String") + " (the archive writes "
            + (name.equals("payload") || name.equals("headers") ? "JSON text" : "text") + " there): alter the"
            + " column, or create the table with ClickHouseArchive.createTable()");
      }
    }
    envelopeColumns = envelopeColumns(columns);
    String type = columns.get("created_at");
    boolean wide;
    if (DATETIME.matcher(type).matches()) {
      wide = false;
    } else if (DATETIME64_UTC.matcher(type).matches()) {
      wide = true;
    } else {
      throw new ArchiveException("column created_at of ClickHouse table " + table + " is " + type
          + "; expected DateTime or DateTime64(p, 'UTC')");
    }
    dateTime64 = wide;
    return wide;
  }

  /**
   * The envelope's columns of the table, each checked to take what the archive writes there: an integer
   * for {@code sequence} and {@code schema_version}, the type of {@code created_at} (possibly Nullable) for
   * {@code occurred_at}, a String for {@code trace_parent}. Absent ones are left out of the rows.
   */
  private Set<String> envelopeColumns(Map<String, String> columns) {
    Map<String, Pattern> expected = new LinkedHashMap<>();
    expected.put("sequence", INTEGER);
    expected.put("schema_version", INTEGER);
    expected.put("occurred_at", Pattern.compile("(?:Nullable\\()?(?:" + DATETIME.pattern() + "|"
        + DATETIME64_UTC.pattern() + ")\\)?"));
    expected.put("trace_parent", Pattern.compile(STRING));
    Set<String> present = new java.util.LinkedHashSet<>();
    for (Map.Entry<String, Pattern> column : expected.entrySet()) {
      String type = columns.get(column.getKey());
      if (type == null) {
        continue;
      }
      if (!column.getValue().matcher(type).matches()) {
        throw new ArchiveException("column " + column.getKey() + " of ClickHouse table " + table + " is " + type
            + "; expected " + (column.getKey().equals("trace_parent") ? "String"
            : column.getKey().equals("occurred_at") ? "the type of created_at" : "an integer type such as UInt64")
            + ": alter the column, or drop it to archive without it");
      }
      present.add(column.getKey());
    }
    if (columns.containsKey("occurred_at") && !sameTime(columns.get("occurred_at"), columns.get("created_at"))) {
      throw new ArchiveException("column occurred_at of ClickHouse table " + table + " is "
          + columns.get("occurred_at") + " but created_at is " + columns.get("created_at")
          + "; give both the same time type");
    }
    return Set.copyOf(present);
  }

  private static boolean sameTime(String occurred, String created) {
    return DATETIME64_UTC.matcher(occurred.replaceFirst("^Nullable\\((.*)\\)$", "$1")).matches()
        == DATETIME64_UTC.matcher(created).matches();
  }

  /** Runs {@code sql} (with {@code data} after it, as the insert's rows) and returns the answer on 200. */
  private String execute(String sql, byte[] data, String what) {
    URI target;
    HttpRequest.Builder request;
    if (data == null) {
      target = uri;
      request = HttpRequest.newBuilder(target).POST(HttpRequest.BodyPublishers.ofString(sql, StandardCharsets.UTF_8));
    } else {
      target = URI.create(uri + "?query=" + URLEncoder.encode(sql, StandardCharsets.UTF_8));
      request = HttpRequest.newBuilder(target).POST(HttpRequest.BodyPublishers.ofByteArray(data));
    }
    request.timeout(timeout).header("Content-Type", "text/plain; charset=UTF-8");
    if (user != null) {
      request.header("X-ClickHouse-User", user);
      request.header("X-ClickHouse-Key", password == null ? "" : password);
    }
    HttpResponse<String> response;
    try {
      response = client.send(request.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    } catch (IOException e) {
      throw new ArchiveException("ClickHouse at " + uri + " is unreachable for " + what + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ArchiveException("interrupted during " + what + " at ClickHouse " + uri, e);
    }
    if (response.statusCode() != 200) {
      String text = serverError(response.body(), data != null);
      throw new ArchiveException("ClickHouse at " + uri + " refused " + what + " (HTTP " + response.statusCode()
          + (user != null && (response.statusCode() == 401 || response.statusCode() == 403 || text.contains("Authentication"))
              ? ", user " + user : "") + "): " + text);
    }
    return response.body();
  }

  /**
   * ClickHouse's error text for a message. The answer to an insert quotes the rows it could not parse
   * (payloads, personal data): only its error code is kept.
   */
  static String serverError(String body, boolean rows) {
    String text = body.strip();
    if (rows) {
      Matcher code = ERROR_CODE.matcher(text);
      return code.find() ? "ClickHouse error code " + code.group(1) + " (its text is left out: it quotes the rows)"
          : "no ClickHouse error code (its text is left out: it may quote the rows)";
    }
    return text.length() > MAX_ERROR_TEXT ? text.substring(0, MAX_ERROR_TEXT) + "…" : text;
  }

  @Override
  public String toString() {
    return "ClickHouse table " + table + " at " + uri;
  }

  /** Options of a {@link ClickHouseArchive}; {@link #build()} validates them. */
  public static final class Builder {
    private String url;
    private String table = DEFAULT_TABLE;
    private String user;
    private String password;
    private Duration timeout = Duration.ofSeconds(30);

    private Builder() {}

    /** Required: the HTTP interface, e.g. {@code http://clickhouse.svc:8123}; no credentials in it. */
    public Builder url(String url) {
      this.url = url;
      return this;
    }

    /** The table, {@code name} or {@code database.name} (default {@code outbox_archive}). */
    public Builder table(String table) {
      this.table = table;
      return this;
    }

    /** The ClickHouse user and password; {@code null} user: the server's default user. Never logged. */
    public Builder credentials(String user, String password) {
      this.user = user;
      this.password = password;
      return this;
    }

    /** Connect and request timeout (default 30 s). */
    public Builder timeout(Duration timeout) {
      this.timeout = timeout;
      return this;
    }

    /** @throws InvalidConfigurationException naming the option that is wrong */
    public ClickHouseArchive build() {
      URI uri = validUrl(url);
      if (table == null) {
        throw new InvalidConfigurationException("table is required, e.g. outbox_archive");
      }
      String[] parts = table.split("\\.", -1);
      StringBuilder quoted = new StringBuilder();
      for (String part : parts) {
        if (parts.length > 2 || !IDENTIFIER.matcher(part).matches()) {
          throw new InvalidConfigurationException("table '" + table + "' is not a valid table name: use"
              + " [A-Za-z_][A-Za-z0-9_]* (at most 64), optionally prefixed by a database and a dot");
        }
        quoted.append(quoted.length() == 0 ? "" : ".").append('`').append(part).append('`');
      }
      if (user != null && (user.isEmpty() || user.chars().anyMatch(c -> c < 0x20 || c > 0x7e))) {
        throw new InvalidConfigurationException("user must be visible ASCII characters");
      }
      if (password != null && password.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
        throw new InvalidConfigurationException("password contains a control character");
      }
      if (timeout == null || timeout.isNegative() || timeout.isZero()) {
        throw new InvalidConfigurationException("timeout must be > 0, was " + timeout);
      }
      return new ClickHouseArchive(this, uri, quoted.toString());
    }

    /**
     * The URL with a path. A URL may carry a password (user-info, a password parameter): a message shows at
     * most its host and port, and only once no user-info is in it. (The replay's ClickHouseArchiveSource checks
     * its URL with the same rules.)
     */
    private static URI validUrl(String url) {
      String example = "http://127.0.0.1:8123";
      String credentials = ".credentials(user, password)";
      if (url == null || url.isBlank()) {
        throw new InvalidConfigurationException("url is required, e.g. " + example);
      }
      if (url.indexOf('@') >= 0) {
        // user-info, maybe with a password holding '/', '?' or '#': whatever else is wrong, repeat none of it
        throw new InvalidConfigurationException("url must not contain credentials: pass them as " + credentials);
      }
      URI uri;
      try {
        uri = new URI(url);
      } catch (URISyntaxException e) {
        throw new InvalidConfigurationException("url is not a valid URL (" + e.getReason() + " at index "
            + e.getIndex() + "), e.g. " + example);
      }
      if (!("http".equalsIgnoreCase(uri.getScheme()) || "https".equalsIgnoreCase(uri.getScheme()))) {
        throw new InvalidConfigurationException("url must start with http:// or https://, e.g. " + example);
      }
      if (uri.getRawQuery() != null) {
        throw new InvalidConfigurationException("url must not have a query string (settings and passwords do not"
            + " belong there): use e.g. " + example + ", credentials as " + credentials
            + ", and the database in the table (db.outbox_archive)");
      }
      if (uri.getRawFragment() != null) {
        throw new InvalidConfigurationException("url must not have a fragment ('#…'): use e.g. " + example);
      }
      if (uri.getHost() == null || uri.getPort() == 0 || uri.getPort() > 65535) {
        throw new InvalidConfigurationException("url host '" + uri.getRawAuthority() + "' is not host[:port]: a"
            + " host name has letters, digits, '-' and '.' (no '_'), a port is 1 to 65535; e.g. " + example);
      }
      return uri.getRawPath() == null || uri.getRawPath().isEmpty() ? uri.resolve("/") : uri;
    }
  }
}
