package io.mic.outbox.archive;

import java.net.URI;
import java.time.Duration;

/**
 * The options of an archive table on a ClickHouse server, one set of names for the archive sink
 * ({@link ClickHouseArchive#builder()}) and the replay's source ({@code ClickHouseArchiveSource.builder()}):
 * {@code url}, {@code table}, {@code credentials}, {@code connectTimeout}, {@code queryTimeout}. Each
 * builder keeps its own defaults for the timeouts (an insert of a page, a sorted replay of a table) and its
 * own exception type; the checks and their messages are these.
 *
 * <pre>{@code
 * ClickHouseArchive.builder().url("http://clickhouse:8123").table("outbox_archive")
 *     .credentials(user, password).connectTimeout(Duration.ofSeconds(5)).build();
 * }</pre>
 */
public abstract class ClickHouseConnectionBuilder<B extends ClickHouseConnectionBuilder<B>> {
  public static final String DEFAULT_TABLE = "outbox_archive";

  private String url;
  private String table = DEFAULT_TABLE;
  private String user;
  private String password;
  private Duration connectTimeout;
  private Duration queryTimeout;

  protected ClickHouseConnectionBuilder(Duration connectTimeout, Duration queryTimeout) {
    this.connectTimeout = connectTimeout;
    this.queryTimeout = queryTimeout;
  }

  /** Required: the HTTP interface, e.g. {@code http://clickhouse.svc:8123}; no credentials in it. */
  public B url(String url) {
    this.url = url;
    return self();
  }

  /** The archive table, {@code name} or {@code database.name} (default {@code outbox_archive}). */
  public B table(String table) {
    this.table = table;
    return self();
  }

  /** The ClickHouse user and password; {@code null} user: the server's default user. Never logged. */
  public B credentials(String user, String password) {
    this.user = user;
    this.password = password;
    return self();
  }

  public B connectTimeout(Duration connectTimeout) {
    this.connectTimeout = connectTimeout;
    return self();
  }

  /** How long ClickHouse may take to start answering a request (a query's sort included). */
  public B queryTimeout(Duration queryTimeout) {
    this.queryTimeout = queryTimeout;
    return self();
  }

  @SuppressWarnings("unchecked")
  private B self() {
    return (B) this;
  }

  protected abstract RuntimeException invalid(String option, String message);

  /** The table as given; valid once {@link #connect} returned. */
  protected final String table() {
    return table;
  }

  /**
   * Checks every option (the URL shows at most its host and port in a message, a password never).
   *
   * @param credentialsHint where credentials go, for the messages
   */
  protected final ClickHouseHttp connect(String credentialsHint) {
    URI uri;
    try {
      uri = ClickHouseUrl.parse(url, credentialsHint);
    } catch (IllegalArgumentException e) {
      throw invalid("url", e.getMessage());
    }
    if (table == null) {
      throw invalid("table", "table is required, e.g. " + DEFAULT_TABLE);
    }
    try {
      ClickHouseSql.quotedTable(table);
    } catch (IllegalArgumentException e) {
      throw invalid("table", "table " + e.getMessage());
    }
    try {
      ClickHouseHttp.checkCredentials(user, password);
    } catch (IllegalArgumentException e) {
      throw invalid(e.getMessage().split(" ", 2)[0], e.getMessage()); // "user …" or "password …"
    }
    requirePositive("connectTimeout", connectTimeout);
    requirePositive("queryTimeout", queryTimeout);
    return new ClickHouseHttp(uri, user, password, connectTimeout, queryTimeout, credentialsHint);
  }

  private void requirePositive(String option, Duration d) {
    if (d == null || d.isNegative() || d.isZero()) {
      throw invalid(option, option + " must be > 0, was " + d);
    }
  }
}
