package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.mic.outbox.InvalidEventException;
import io.mic.outbox.OutboxEvent;
import io.mic.outbox.jdbc.JdbcOutboxStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The suite's security part: hostile identifiers and input, a least-privilege role, secrets kept out of logs. */
@Tag("fast")
class SecurityTest {

  @Test
  void injectedTableNamesAreRefusedAndNothingIsDropped() throws Exception {
    try (Scenario s = Scenario.of("security: identifiers", "throughput", "recording", 901)) {
      for (String hostile : List.of(s.table + "\"; DROP TABLE " + s.table + "; --", s.table + "; DROP TABLE x",
          "a".repeat(64), "outbox\u0000", "")) {
        assertThatThrownBy(() -> JdbcOutboxStore.builder().dataSource(s.dataSource).table(hostile).build())
            .as("table name %s", hostile).isInstanceOf(RuntimeException.class).hasMessageContaining("table");
      }
      assertThat(s.store.countByStatus()).as("the real table is still there").isNotEmpty();
    }
  }

  @Test
  void oversizedAndMalformedEventsAreRefusedAtAppend() {
    OutboxEvent.Builder ok = OutboxEvent.builder().aggregate("a", "1").topic("t");
    assertThatThrownBy(() -> ok.payload("{\"x\":\"" + "y".repeat(OutboxEvent.MAX_PAYLOAD_BYTES) + "\"}").build())
        .isInstanceOf(InvalidEventException.class).hasMessageContaining("MAX_PAYLOAD_BYTES")
        .hasMessageNotContaining("yyyy");
    assertThatThrownBy(() -> ok.payload("{\"secret\": 4").build()).isInstanceOf(InvalidEventException.class)
        .hasMessageNotContaining("secret");
    assertThatThrownBy(() -> ok.payload("[".repeat(5000) + "]".repeat(5000)).build())
        .as("nesting deeper than the JSON parser allows").isInstanceOf(InvalidEventException.class);
    assertThatThrownBy(() -> ok.payload("{\"n\":" + "9".repeat(5000) + "}").build())
        .as("a number of 5,000 digits").isInstanceOf(InvalidEventException.class);
    assertThatThrownBy(() -> ok.payload("{}").header("x", "a\r\nNats-Msg-Id: forged").build())
        .isInstanceOf(InvalidEventException.class);
    assertThatThrownBy(() -> OutboxEvent.builder().aggregate("a", "1\r\n2").topic("t").payload("{}").build())
        .isInstanceOf(InvalidEventException.class);
    assertThatThrownBy(() -> OutboxEvent.builder().aggregate("a", "1").topic("orders.>").payload("{}").build())
        .isInstanceOf(InvalidEventException.class);
  }

  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void leastPrivilegeRoleDispatchesAndCannotChangeTheSchema() throws Exception {
    try (Scenario s = Scenario.of("security: least-privilege runtime role", "ordered", "recording", 902)) {
      String role = "faults_rt_" + s.table.substring(2);
      String password = Servers.PG_APP_PASSWORD + "rt";
      s.execute("CREATE ROLE " + role + " LOGIN PASSWORD '" + password + "'");
      s.execute("GRANT SELECT, INSERT, UPDATE, DELETE ON " + s.table + " TO " + role);
      try {
        String url = s.postgres.appUrl("faults-worker").replace("user=" + PrivatePostgres.APP_ROLE + "&password="
            + Servers.PG_APP_PASSWORD, "user=" + role + "&password=" + password);
        s.produce();
        s.worker("runtime-role", "jdbc=" + url);
        s.awaitProduced(60);
        s.finish();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        try (HikariDataSource runtime = new HikariDataSource(config)) {
          assertThatThrownBy(() -> JdbcOutboxStore.builder().dataSource(runtime).table("f_ddl_" + s.table.substring(2))
              .build().createSchema()).hasMessageContaining("permission denied").hasMessageNotContaining(password);
          try (Connection c = runtime.getConnection(); Statement st = c.createStatement()) {
            assertThatThrownBy(() -> st.execute("DROP TABLE " + s.table)).hasMessageContaining("must be owner");
          }
        }
        assertThat(Files.readString(s.dir.resolve("runtime-role.err"))).doesNotContain(password);
      } finally {
        s.execute("DROP OWNED BY " + role);
        s.execute("DROP ROLE " + role);
      }
    }
  }

  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void wrongAndRightCredentialsNeverReachTheLogs() throws Exception {
    try (Scenario s = Scenario.of("security: secrets in logs", "ordered", "nats", 903)) {
      String wrong = Servers.PG_APP_PASSWORD + "wrong";
      String badDb = s.postgres.appUrl("faults-worker").replace(Servers.PG_APP_PASSWORD, wrong);
      WorkerProcess refused = WorkerProcess.start("bad-db-password", s.dir, List.of("jdbc=" + badDb,
          "table=" + s.table, "mode=ordered", "sink=record:" + s.deliveries));
      Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> !refused.isAlive());
      String wrongNats = Servers.NATS_PASSWORD + "wrong";
      s.produce();
      WorkerProcess badNats = s.worker("bad-nats-password", "sink=nats:" + Servers.nats().url().replace(
          Servers.NATS_PASSWORD, wrongNats));
      s.awaitProduced(20);
      s.worker("good");
      s.awaitProduced(20);
      badNats.close();
      s.finish(); // also checks every worker log of the scenario for the suite's secrets
      for (Path log : List.of(s.dir.resolve("bad-db-password.err"), s.dir.resolve("bad-db-password.out"),
          s.dir.resolve("bad-nats-password.err"), s.dir.resolve("bad-nats-password.out"))) {
        String text = Files.readString(log);
        assertThat(text).as("%s", log).doesNotContain(wrong).doesNotContain(wrongNats)
            .doesNotContain(Servers.PG_APP_PASSWORD).doesNotContain(Servers.NATS_PASSWORD);
      }
      assertThat(Files.readString(s.dir.resolve("bad-db-password.err"))).as("the refusal is explained")
          .contains("password authentication failed");
    }
  }
}
