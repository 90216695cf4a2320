package io.mic.outbox.jdbc.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ConnectException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import org.junit.jupiter.api.Test;

class CausesTest {

  @Test
  void describesTheChainDownToTheRootWithoutRepeats() {
    ConnectException root = new ConnectException("Connection refused");
    SQLException driver = new SQLException("Connection to 127.0.0.1:1 refused.", "08001", root);
    SQLTransientConnectionException pool = new SQLTransientConnectionException(
        "pool-1 - Connection is not available, request timed out after 250ms", "08001", driver);
    assertThat(Causes.describe(pool)).isEqualTo("pool-1 - Connection is not available, request timed out after"
        + " 250ms; caused by: Connection to 127.0.0.1:1 refused.; Connection refused");
    assertThat(Causes.describe(new SQLException("same", new SQLException("same")))).isEqualTo("same");
    assertThat(Causes.describe(new IllegalStateException((String) null))).isEqualTo("IllegalStateException");
  }

  @Test
  void masksPasswordsInUrlsAndProperties() {
    assertThat(Causes.redact("cannot open jdbc:postgresql://db:5432/app?user=app&password=s3cr/et&ssl=true"))
        .isEqualTo("cannot open jdbc:postgresql://db:5432/app?user=app&password=***&ssl=true");
    assertThat(Causes.redact("url jdbc:h2:mem:x;USER=sa;PASSWORD=top;MODE=PostgreSQL"))
        .isEqualTo("url jdbc:h2:mem:x;USER=sa;PASSWORD=***;MODE=PostgreSQL");
    assertThat(Causes.redact("jdbc:mariadb://app:p%40ss:w@db:3306/app refused"))
        .isEqualTo("jdbc:mariadb://app:***@db:3306/app refused");
    assertThat(Causes.redact("jdbc:postgresql://app:a/b@c@db/app and more"))
        .isEqualTo("jdbc:postgresql://app:***@db/app and more");
    assertThat(Causes.redact("Access denied for user 'app'@'10.0.0.1' (using password: YES)"))
        .isEqualTo("Access denied for user 'app'@'10.0.0.1' (using password: YES)");
  }
}
