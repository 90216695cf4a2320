package io.mic.replay;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** A ClickHouse URL the command cannot use is refused with the option and the fix, and never echoed with a secret. */
class ClickHouseUrlTest {
  private static final String SECRET = "s3cret-Xq7";
  private static final String CREDENTIALS = "url must not contain credentials: pass them as"
      + " --clickhouse-user/--clickhouse-password or CLICKHOUSE_USER/CLICKHOUSE_PASSWORD";

  @ParameterizedTest
  @CsvSource(delimiter = '|', value = {
      "http://reader:s3cret-Xq7@click_house:8123|" + CREDENTIALS,
      "http://reader:s3cret-Xq7@127.0.0.1:80a|" + CREDENTIALS,
      "http://reader:s3cret-Xq7@127.0.0.1:99999/|" + CREDENTIALS,
      "http://reader:s3cret-Xq7@127.0.0.1:8123/?user=x|" + CREDENTIALS,
      "http://127.0.0.1:8123/?password=s3cret-Xq7|url must not have a query string (settings and passwords do not"
          + " belong there): use e.g. http://127.0.0.1:8123, credentials as --clickhouse-user/--clickhouse-password"
          + " or CLICKHOUSE_USER/CLICKHOUSE_PASSWORD, and the database in the table (db.outbox_archive)",
      "http://127.0.0.1:8123/#s3cret-Xq7|url must not have a fragment ('#…'): use e.g. http://127.0.0.1:8123",
      "http://click_house:8123|url host 'click_house:8123' is not host[:port]: a host name has letters, digits, '-'"
          + " and '.' (no '_'), a port is 1 to 65535; e.g. http://127.0.0.1:8123",
      "http://127.0.0.1:99999|url host '127.0.0.1:99999' is not host[:port]: a host name has letters, digits, '-'"
          + " and '.' (no '_'), a port is 1 to 65535; e.g. http://127.0.0.1:8123",
      "ftp://127.0.0.1:8123|url must start with http:// or https://, e.g. http://127.0.0.1:8123"})
  void anUnusableUrlIsExit2NamingTheOptionWithoutItsSecret(String url, String message) {
    Cli cli = Cli.run("--from-clickhouse", url, "--topic", "order.created", "--from", "2026-09-29T08:00:00Z",
        "--to", "2026-09-29T10:00:00Z");

    assertThat(cli.exitCode()).isEqualTo(2);
    assertThat(cli.stderr()).isEqualTo("mic-events-replay: --from-clickhouse: " + message + "\n"
        + "Try 'mic-events-replay --help' for the options.\n");
    assertThat(cli.stderr() + cli.stdout()).doesNotContain(SECRET);
  }
}
