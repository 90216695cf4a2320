package io.mic.outbox.faults;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** {@code pg_terminate_backend} on every session of the workers, again and again, under load. */
class SessionKillTest {

  @Tag("fast")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void workerSessionsTerminated() throws Exception {
    terminateAgainAndAgain(false);
  }

  /** The same with claims held by transactions: each kill rolls back every batch the workers held. */
  @Tag("full")
  @Test
  @Timeout(value = 5, unit = TimeUnit.MINUTES)
  void workerSessionsTerminatedWithTransactionalClaims() throws Exception {
    terminateAgainAndAgain(true);
  }

  private static void terminateAgainAndAgain(boolean transactionalClaims) throws Exception {
    int rounds = Servers.full() ? 30 : 8;
    try (Scenario s = Scenario.of("pg_terminate_backend x" + rounds, "ordered", "recording", 301)) {
      s.transactionalClaims = transactionalClaims;
      s.repetitions = rounds;
      s.produce();
      s.worker("w1");
      s.worker("w2");
      for (int r = 0; r < rounds; r++) {
        s.awaitProduced(12);
        if (terminateWorkerSessions(s) > 0) {
          // a terminated mark leaves its batches published but unmarked: what each of the two workers had in flight
          s.duplicateBound += 2L * s.inFlight();
        }
      }
      s.awaitProduced(30);
      s.finish();
    }
  }

  static int terminateWorkerSessions(Scenario s) throws Exception {
    try (Connection c = s.postgres.admin(); Statement st = c.createStatement();
        ResultSet rs = st.executeQuery("SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
            + " WHERE application_name = 'faults-worker'")) {
      rs.next();
      return rs.getInt(1);
    }
  }
}
