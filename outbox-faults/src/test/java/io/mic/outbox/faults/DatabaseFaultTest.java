package io.mic.outbox.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The suite's own PostgreSQL is restarted ({@code fast}) or crashed ({@code immediate}: recovery from the
 * WAL at the next start) under load, and cut off or reset by a proxy. Producers find out whether their
 * interrupted commits happened; workers must lose nothing and keep order.
 */
class DatabaseFaultTest {

  /** With leases, and with claims held by transactions, whose transactions a restart ends at once. */
  @Tag("full")
  @ParameterizedTest(name = "PostgreSQL stop -m {0} and start, under load, claims held by transactions: {1}")
  @MethodSource("restarts")
  @Timeout(value = 6, unit = TimeUnit.MINUTES)
  void restartUnderLoad(String mode, boolean transactionalClaims) throws Exception {
    int restarts = 2;
    try (Scenario s = Scenario.of("PostgreSQL stop -m " + mode + " + start", "ordered", "recording", 701)) {
      s.transactionalClaims = transactionalClaims;
      s.repetitions = restarts;
      try (Connection c = s.postgres.admin(); Statement st = c.createStatement();
          ResultSet rs = st.executeQuery("SELECT current_setting('fsync'), current_setting('synchronous_commit')")) {
        rs.next();
        assertThat(rs.getString(1) + "/" + rs.getString(2)).as("durable commits").isEqualTo("on/on");
      }
      s.produce();
      s.worker("w1");
      s.worker("w2");
      for (int r = 0; r < restarts; r++) {
        s.awaitProduced(40);
        s.postgres.stopServer(mode);
        s.postgres.startServer();
        s.duplicateBound += 2L * s.inFlight(); // what each of the two workers had in flight
      }
      s.awaitProduced(40);
      s.finish();
    }
  }

  @Tag("full")
  @ParameterizedTest(name = "database proxy: {0}")
  @ValueSource(strings = {"reset", "blackhole"})
  @Timeout(value = 6, unit = TimeUnit.MINUTES)
  void databaseConnectionsCutOff(String fault) throws Exception {
    try (Scenario s = Scenario.of("database proxy: " + ("reset".equals(fault) ? "reset all x5"
            : "blackhole 12 s (socketTimeout 10 s)"), "ordered", "recording", 702);
        TcpProxy proxy = new TcpProxy(Servers.postgres().port())) {
      s.dbPort = proxy.port();
      s.produce();
      s.worker("w1");
      s.worker("w2");
      int rounds = "reset".equals(fault) ? 5 : 1;
      s.repetitions = rounds;
      for (int r = 0; r < rounds; r++) {
        s.awaitProduced(40);
        if ("reset".equals(fault)) {
          proxy.resetAll();
        } else {
          proxy.blackhole();
          long cut = System.nanoTime();
          Awaitility.await().atMost(Duration.ofSeconds(60)).until(() -> System.nanoTime() - cut > 12_000_000_000L);
          proxy.heal();
        }
        s.duplicateBound += 2L * s.inFlight();
      }
      s.awaitProduced(40);
      s.finish();
    }
  }

  static Stream<Arguments> restarts() {
    return Stream.of("fast", "immediate")
        .flatMap(mode -> Stream.of(Arguments.of(mode, false), Arguments.of(mode, true)));
  }
}
