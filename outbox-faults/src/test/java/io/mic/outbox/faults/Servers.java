package io.mic.outbox.faults;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import org.junit.jupiter.api.Assumptions;
import java.security.SecureRandom;

/**
 * The suite's private PostgreSQL and NATS servers, started once per test JVM on first use and stopped
 * (directories deleted) when the JVM exits, whether the tests passed or not. The shared servers of the
 * machine are never touched: faults that stop or crash a server hit these.
 */
final class Servers {
  /** Test secrets: they must never appear in a log line or an exception message. */
  static final String PG_ADMIN_PASSWORD = secret("pgadmin");
  static final String PG_APP_PASSWORD = secret("pgapp");
  static final String NATS_PASSWORD = secret("nats");

  private static PrivatePostgres postgres;
  private static PrivateNats nats;

  private Servers() {}

  private static String secret(String what) {
    byte[] b = new byte[9];
    new SecureRandom().nextBytes(b);
    return "S3cr3t" + what + HexFormat.of().formatHex(b);
  }

  static synchronized PrivatePostgres postgres() throws Exception {
    requireBinary(PrivatePostgres.BIN + "/initdb");
    if (postgres == null) {
      postgres = PrivatePostgres.start(PG_ADMIN_PASSWORD, PG_APP_PASSWORD);
      Runtime.getRuntime().addShutdownHook(new Thread(postgres::close, "stop-private-postgres"));
    }
    return postgres;
  }

  static synchronized PrivateNats nats() throws Exception {
    requireBinary(PrivateNats.BINARY);
    if (nats == null) {
      nats = PrivateNats.start(NATS_PASSWORD);
      Runtime.getRuntime().addShutdownHook(new Thread(nats::close, "stop-private-nats"));
    }
    return nats;
  }

  /** The suite starts its own servers: without the binaries it fails under CI=true and is skipped elsewhere. */
  private static void requireBinary(String path) {
    if (!Files.isExecutable(Path.of(path))) {
      String message = path + " is missing: install postgresql-15 and nats-server (Debian packages) to run the"
          + " fault suite";
      if ("true".equalsIgnoreCase(System.getenv("CI"))) {
        throw new AssertionError(message);
      }
      Assumptions.abort(message);
    }
  }

  static boolean full() {
    return Boolean.getBoolean("faults.full");
  }
}
