package io.mic.outbox.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A password pasted into {@code --jdbc-url} (from a {@code DATABASE_URL}, say) is never printed: the drivers
 * do not read user-info, take it for a host or a port and repeat it in their messages, so it is refused before
 * any driver sees it. Against the shared PostgreSQL and MariaDB servers.
 */
class CredentialsTest {

  @ParameterizedTest
  @ValueSource(strings = {
      "jdbc:postgresql://postgres:S3cret@127.0.0.1:5432/test",
      "jdbc:postgresql://postgres:S3cret@localhost/test",
      "jdbc:mariadb://root:S3cret@127.0.0.1:3306/test",
      "jdbc:mariadb://root:S3cret@127.0.0.1/test",
      "jdbc:mariadb:replication://root:S3cret@127.0.0.1,127.0.0.1/test",
      "jdbc:mysql://root:S3cr/et@x@127.0.0.1:3306/test"})
  void userInfoInTheJdbcUrlIsRefusedWithoutRepeatingThePassword(String url) {
    Run r = Run.of(Map.of(), "--jdbc-url", url, "status");
    assertThat(r.exitCode()).as(r.stderr()).isEqualTo(2);
    assertThat(r.stdout() + r.stderr()).doesNotContain("S3cr");
    assertThat(r.stderr()).contains("names a user and password before the host, which the JDBC drivers do not"
        + " read: remove them from the URL and give --user NAME, the password in MIC_OUTBOX_PASSWORD or by"
        + " --password");
  }

  @Test
  void aUserWithARealmInTheQueryIsNotUserInfo() {
    Run r = Run.of(Map.of(), "--jdbc-url", "jdbc:postgresql://127.0.0.1:5432/test?user=nobody@realm", "status");
    assertThat(r.exitCode()).isEqualTo(2);
    assertThat(r.stderr()).startsWith("mic-outbox: cannot connect to jdbc:postgresql://")
        .contains("role \"nobody@realm\" does not exist").doesNotContain("names a user and password");
  }
}
